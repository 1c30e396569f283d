// The fencing wire convention (clients/conformance/fencing.json is its source of truth): how a
// request carries its fence (the lock's name and the grant's fencing token) to a protected resource.

/** gRPC metadata keys (grpc-js keeps metadata keys in lower case). */
export const FENCE_METADATA = { lock: 'holdfast-fence-lock', token: 'holdfast-fence-token' } as const;
/** HTTP header names (HTTP header names are case-insensitive). */
export const FENCE_HEADERS = { lock: 'Holdfast-Fence-Lock', token: 'Holdfast-Fence-Token' } as const;

/** The largest fencing token: uint64. */
export const MAX_FENCING_TOKEN = 2n ** 64n - 1n;

export type FenceField = 'lock' | 'token';

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
    super(`${kind} fence: ${header} ${why}`);
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
export function decodeFence(raw: { lock?: string; token?: string }, names: { lock: string; token: string }): Fence {
  if (raw.token === undefined) throw new FenceError('missing', 'token', names.token, 'is required');
  if (raw.lock === undefined) throw new FenceError('missing', 'lock', names.lock, 'is required');
  return { lock: decodeLock(raw.lock, names.lock), token: decodeToken(raw.token, names.token) };
}

function decodeToken(text: string, name: string): bigint {
  if (!DECIMAL.test(text) || text.length > 20 || BigInt(text) > MAX_FENCING_TOKEN) {
    throw new FenceError('malformed', 'token', name, `must be an unsigned decimal integer without leading zeros, at most ${MAX_FENCING_TOKEN}`);
  }
  return BigInt(text);
}

function decodeLock(text: string, name: string): string {
  if (text === '') throw new FenceError('malformed', 'lock', name, 'must not be empty');
  try {
    return decodeURIComponent(text);
  } catch {
    throw new FenceError('malformed', 'lock', name, 'must be percent-encoded UTF-8 (as encodeURIComponent writes it)');
  }
}
