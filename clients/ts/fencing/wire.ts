// The fencing wire convention (clients/conformance/fencing.json and signed-fence.md are its source
// of truth): how a request carries its fence to a protected resource. The unsigned fence is the
// lock's name and the grant's fencing token; the signed fence (signed.ts) is one string that also
// names the namespace and the lease's end, signed by the holdfast server.

/** gRPC metadata keys (grpc-js keeps metadata keys in lower case). */
export const FENCE_METADATA = { fence: 'holdfast-fence', lock: 'holdfast-fence-lock', token: 'holdfast-fence-token' } as const;
/** HTTP header names (HTTP header names are case-insensitive). */
export const FENCE_HEADERS = { fence: 'Holdfast-Fence', lock: 'Holdfast-Fence-Lock', token: 'Holdfast-Fence-Token' } as const;

/** The names a transport gives the three fields (FENCE_HEADERS or FENCE_METADATA). */
export type FenceNames = { readonly fence: string; readonly lock: string; readonly token: string };

/** The largest fencing token: uint64. */
export const MAX_FENCING_TOKEN = 2n ** 64n - 1n;

/** Which of the three travels wrong: the signed fence, or the unsigned pair's lock or token. */
export type FenceField = 'fence' | 'lock' | 'token';

/** A request's fence, decoded. */
export interface Fence {
  lock: string;
  token: bigint;
}

/** Why a request's fence cannot be read: the guard answers INVALID_ARGUMENT / 400 with it. */
export class FenceError extends Error {
  constructor(
    readonly kind: 'missing' | 'malformed',
    readonly field: FenceField,
    /** The header (or metadata key) at fault, as the transport names it. */
    readonly header: string,
    why: string,
  ) {
    super(kind === 'missing' ? `missing fence: header ${header} ${why}` : `malformed fence: ${header} ${why}`);
    this.name = 'FenceError';
  }
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;

/** The wire form of a fence: the lock name percent-encoded, the token in decimal. */
export function encodeFence(lock: string, token: bigint | string | number): { lock: string; token: string } {
  const value = BigInt(token);
  if (value < 0n || value > MAX_FENCING_TOKEN) throw new RangeError(`fencing token ${value} is outside uint64`);
  if (lock === '') throw new RangeError('the lock name is empty');
  return { lock: encodeURIComponent(lock), token: value.toString() };
}

/**
 * Reads a fence from two raw values (undefined when absent). `names` are the header or metadata
 * names to quote in errors. Throws FenceError.
 */
export function decodeFence(raw: { lock?: string; token?: string }, names: Pick<FenceNames, 'lock' | 'token'>): Fence {
  if (raw.token === undefined) throw new FenceError('missing', 'token', names.token, 'is required');
  if (raw.lock === undefined) throw new FenceError('missing', 'lock', names.lock, 'is required');
  return { lock: decodeName(raw.lock, 'lock', names.lock), token: decodeUint64(raw.token, 'token', names.token) };
}

/**
 * An unsigned decimal uint64 without leading zeros, or FenceError naming `header`; `part` names
 * the part of the header at fault (e.g. "token field"), when it is not the whole header.
 */
export function decodeUint64(text: string, field: FenceField, header: string, part?: string): bigint {
  if (!DECIMAL.test(text) || text.length > 20 || BigInt(text) > MAX_FENCING_TOKEN) {
    throw new FenceError('malformed', field, header, `${its(part)}must be an unsigned decimal integer without leading zeros, at most ${MAX_FENCING_TOKEN}`);
  }
  return BigInt(text);
}

/** A percent-encoded, non-empty name (a lock's or a namespace's), or FenceError naming `header` (and `part`). */
export function decodeName(text: string, field: FenceField, header: string, part?: string): string {
  if (text === '') throw new FenceError('malformed', field, header, `${its(part)}must not be empty`);
  try {
    return decodeURIComponent(text);
  } catch {
    throw new FenceError('malformed', field, header, `${its(part)}must be percent-encoded UTF-8 (as encodeURIComponent writes it)`);
  }
}

function its(part: string | undefined): string {
  return part === undefined ? '' : `(its ${part}) `;
}
