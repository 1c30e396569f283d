// Attaching a grant's fence to an outgoing request, on the holder's side (Lease.fence, Lock.fence).
// With a signed fence (a server with a signing key), it travels with the unsigned pair, so a guard
// that predates signed fences keeps working (clients/conformance/signed-fence.md).
import { Metadata } from '@grpc/grpc-js';
import { encodeFence, FENCE_HEADERS, FENCE_METADATA } from './wire';

/** What `fence()` can write to: a plain headers object, a fetch `Headers`, or Node's `ClientRequest`. */
export type HeaderTarget =
  | Record<string, string | string[] | number | undefined>
  | { set(name: string, value: string): void }
  | { setHeader(name: string, value: string): unknown };

/** The values to send: the unsigned pair, and the signed fence when there is one. */
function wireValues(lock: string, token: bigint, signedFence: string | undefined): [field: 'fence' | 'lock' | 'token', value: string][] {
  const wire = encodeFence(lock, token);
  const values: [field: 'fence' | 'lock' | 'token', value: string][] = [
    ['lock', wire.lock],
    ['token', wire.token],
  ];
  if (signedFence) values.push(['fence', signedFence]);
  return values;
}

/**
 * Sets Holdfast-Fence-Lock and Holdfast-Fence-Token (and Holdfast-Fence when `signedFence` is
 * given) on `headers` and returns it. The signed fence is a bearer credential: never log it.
 */
export function attachFenceHeaders<T extends HeaderTarget>(headers: T, lock: string, token: bigint, signedFence?: string): T {
  const target = headers as { set?: (n: string, v: string) => void; setHeader?: (n: string, v: string) => unknown };
  for (const [field, value] of wireValues(lock, token, signedFence)) {
    const name = FENCE_HEADERS[field];
    if (typeof target.set === 'function') target.set(name, value);
    else if (typeof target.setHeader === 'function') target.setHeader(name, value);
    else (headers as Record<string, string>)[name] = value;
  }
  return headers;
}

/** Sets holdfast-fence-lock and holdfast-fence-token (and holdfast-fence when signed) on `metadata` (a new Metadata by default) and returns it. */
export function attachFenceMetadata(lock: string, token: bigint, metadata: Metadata = new Metadata(), signedFence?: string): Metadata {
  for (const [field, value] of wireValues(lock, token, signedFence)) metadata.set(FENCE_METADATA[field], value);
  return metadata;
}
