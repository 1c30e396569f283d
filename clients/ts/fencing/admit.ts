// The guard's checks that need no store (clients/conformance/signed-fence.md, steps 1 to 7), the
// same for HTTP and gRPC, and the fence a handler reads once a request is admitted.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { FenceKeyRing } from './keys';
import { FenceRefusal } from './refusal';
import { parseSignedFence } from './signed';
import { decodeFence, decodeName, decodeUint64, FenceError, type Fence, type FenceNames } from './wire';

/** An admitted request's fence, as its handler reads it (currentFence(), fenceOf(req)). */
export interface AdmittedFence extends Fence {
  /** The fence's namespace; empty for an unsigned fence. */
  namespace: string;
  /** When its lease ends (Unix ms, the server's clock); null for an unsigned fence or one that states no end. */
  leaseEndMs: bigint | null;
  /** The key that signed it; empty for an unsigned fence. */
  keyId: string;
  signed: boolean;
}

/** How a guard judges a fence before it asks its store. */
export interface FenceRules {
  /**
   * The public keys whose signed fences are accepted (parseFenceKeys, readFenceKeys,
   * fetchFenceKeys). With keys, a request must carry a signed fence unless `acceptUnsigned`.
   * Without, the guard reads the unsigned pair only, as before signed fences.
   */
  keys?: FenceKeyRing;
  /** The namespace a signed fence must be for; default `default`. */
  namespace?: string;
  /** With keys: also admit requests that carry only the unsigned pair (during an upgrade). Default false. */
  acceptUnsigned?: boolean;
  /**
   * Turns the lease-end check on: a signed fence whose lease ended more than this many ms ago by
   * this process's clock is refused (409 fence_lease_ended) even when no newer holder wrote. The
   * allowance must cover the clock difference between the holdfast server and this process.
   * Off by default. Needs `keys`.
   */
  leaseEndSkewMs?: number;
}

/** The values a request carries under each of the three names (several when a header was sent twice). */
export interface FenceValues {
  fence: string[];
  lock: string[];
  token: string[];
}

/**
 * The values of one field as received: each value split at commas, since HTTP and gRPC transports
 * may join a header sent twice into one value ("a, b"), and none of the three ever holds a comma
 * (encodeURIComponent encodes it). So a header sent twice is seen as twice either way.
 */
export function receivedValues(values: readonly string[]): string[] {
  return values.flatMap((v) => (v.includes(',') ? v.split(',').map((part) => part.trim()) : [v]));
}

/** Checks the rules themselves (a guard's options): throws RangeError naming the option at fault. */
export function checkRules(rules: FenceRules, who: string): void {
  if (rules.namespace !== undefined && rules.namespace === '') throw new RangeError(`${who}: namespace must not be empty`);
  const skew = rules.leaseEndSkewMs;
  if (skew !== undefined) {
    if (!Number.isSafeInteger(skew) || skew < 0) throw new RangeError(`${who}: leaseEndSkewMs must be a whole number of ms, 0 or more, got ${skew}`);
    if (!rules.keys) throw new RangeError(`${who}: leaseEndSkewMs needs keys (only a signed fence states its lease's end)`);
  }
}

/**
 * Steps 1 to 7 of the guard, in order: throws the first FenceRefusal, else returns the fence to
 * take to the store. `resourceLock` is the lock of the resource the request touches (undefined:
 * the guard does not know it, which is allowed only without keys); `nowMs` the guard's clock.
 */
export function admitFence(values: FenceValues, names: FenceNames, rules: FenceRules, resourceLock: string | undefined, nowMs = Date.now()): AdmittedFence {
  try {
    return admit(values, names, rules, resourceLock, nowMs);
  } catch (err) {
    if (err instanceof FenceError) throw FenceRefusal.badFence(err);
    throw err;
  }
}

function admit(values: FenceValues, names: FenceNames, rules: FenceRules, resourceLock: string | undefined, nowMs: number): AdmittedFence {
  for (const field of ['fence', 'lock', 'token'] as const) {
    if (values[field].length > 1) throw sentTwice(field, names);
  }
  const [signedText] = values.fence;
  const [lockText] = values.lock;
  const [tokenText] = values.token;
  const { keys } = rules;
  if (!keys || signedText === undefined) {
    // Step 1 (nothing at all) and 2 (unsigned, where signed ones are required).
    if (keys && lockText === undefined && tokenText === undefined) throw new FenceError('missing', 'fence', names.fence, 'is required');
    if (keys && !rules.acceptUnsigned) throw FenceRefusal.signedRequired(names.fence);
    const fence = decodeFence({ lock: lockText, token: tokenText }, names);
    bind(fence.lock, resourceLock); // step 6
    return { ...fence, namespace: '', leaseEndMs: null, keyId: '', signed: false };
  }
  const signed = parseSignedFence(signedText, names.fence); // step 1
  if (lockText !== undefined && decodeName(lockText, 'lock', names.lock) !== signed.lock) {
    throw new FenceError('malformed', 'lock', names.lock, `names another lock than ${names.fence}`);
  }
  if (tokenText !== undefined && decodeUint64(tokenText, 'token', names.token) !== signed.token) {
    throw new FenceError('malformed', 'token', names.token, `carries another token than ${names.fence}`);
  }
  keys.check(signed); // steps 3 and 4
  const namespace = rules.namespace ?? 'default';
  if (signed.namespace !== namespace) throw FenceRefusal.anotherNamespace(signed.namespace, namespace); // step 5
  bind(signed.lock, resourceLock); // step 6
  const skew = rules.leaseEndSkewMs;
  if (skew !== undefined && signed.leaseEndMs !== null && BigInt(nowMs) > signed.leaseEndMs + BigInt(skew)) {
    throw FenceRefusal.leaseEnded(signed.lock, signed.token, signed.leaseEndMs, BigInt(nowMs), BigInt(skew)); // step 7
  }
  return { lock: signed.lock, token: signed.token, namespace: signed.namespace, leaseEndMs: signed.leaseEndMs, keyId: signed.keyId, signed: true };
}

/** The unsigned pair alone (fenceFromHeaders, fenceFromMetadata); throws FenceError. */
export function readUnsigned(values: FenceValues, names: FenceNames): Fence {
  for (const field of ['lock', 'token'] as const) {
    if (values[field].length > 1) throw sentTwice(field, names);
  }
  return decodeFence({ lock: values.lock[0], token: values.token[0] }, names);
}

function sentTwice(field: 'fence' | 'lock' | 'token', names: FenceNames): FenceError {
  return new FenceError('malformed', field, names[field], 'must be sent once (a comma in a value counts as two: none of the three holds one)');
}

function bind(lock: string, resourceLock: string | undefined): void {
  if (resourceLock !== undefined && lock !== resourceLock) throw FenceRefusal.anotherLock(lock, resourceLock);
}

const admitted = new AsyncLocalStorage<AdmittedFence>();

/**
 * The fence of the request being handled, inside a handler (and everything it awaits) that a
 * guard admitted, over HTTP or gRPC; undefined elsewhere.
 */
export function currentFence(): AdmittedFence | undefined {
  return admitted.getStore();
}

/** Runs `work` with `fence` as currentFence(). */
export function withAdmittedFence<T>(fence: AdmittedFence, work: () => T): T {
  return admitted.run(fence, work);
}
