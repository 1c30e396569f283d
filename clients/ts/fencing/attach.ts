// Attaching a grant's fence to an outgoing request, on the holder's side (Lease.fence, Lock.fence).
import { Metadata } from '@grpc/grpc-js';
import { encodeFence, FENCE_HEADERS, FENCE_METADATA } from './wire';

/** What `fence()` can write to: a plain headers object, a fetch `Headers`, or Node's `ClientRequest`. */
export type HeaderTarget =
  | Record<string, string | string[] | number | undefined>
  | { set(name: string, value: string): void }
  | { setHeader(name: string, value: string): unknown };

/** Sets Holdfast-Fence-Lock and Holdfast-Fence-Token on `headers` and returns it. */
export function attachFenceHeaders<T extends HeaderTarget>(headers: T, lock: string, token: bigint): T {
  const wire = encodeFence(lock, token);
  const target = headers as { set?: (n: string, v: string) => void; setHeader?: (n: string, v: string) => unknown };
  for (const field of ['lock', 'token'] as const) {
    const name = FENCE_HEADERS[field];
    if (typeof target.set === 'function') target.set(name, wire[field]);
    else if (typeof target.setHeader === 'function') target.setHeader(name, wire[field]);
    else (headers as Record<string, string>)[name] = wire[field];
  }
  return headers;
}

/** Sets holdfast-fence-lock and holdfast-fence-token on `metadata` (a new Metadata by default) and returns it. */
export function attachFenceMetadata(lock: string, token: bigint, metadata: Metadata = new Metadata()): Metadata {
  const wire = encodeFence(lock, token);
  metadata.set(FENCE_METADATA.lock, wire.lock);
  metadata.set(FENCE_METADATA.token, wire.token);
  return metadata;
}
