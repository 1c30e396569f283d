// Lock engine failures, named in lock terms; the transport turns each kind into one gRPC status.

export type LockErrorKind =
  | 'invalid' // bad input
  | 'not_found' // the token holds nothing
  | 'conflict' // the request contradicts the lock's state (limit, upgrade)
  | 'unavailable' // Redis cannot be reached, or the server is shutting down
  | 'timeout' // not acquired in time (streams only; unary Acquire answers acquired=false)
  | 'lost' // a held lease ended
  | 'exhausted' // a limit was reached (waiters per lock)
  | 'deadlock'; // the wait was ended to break a cycle of waits (src/engine/deadlocks.ts)

export class LockError extends Error {
  constructor(
    readonly kind: LockErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'LockError';
  }
}

/** Result codes the Lua scripts return first; listed once here. */
export const ScriptCode = {
  GRANTED: 1,
  NOT_GRANTED: 0,
  QUEUED: 2,
  NOT_FOUND: -1,
  LIMIT_MISMATCH: -3,
  UPGRADE_REFUSED: -4,
  REQUEST_ID_REUSED: -5,
  TOO_MANY_WAITERS: -6,
  /** claim-4: the waiter was aborted to break a deadlock (abort-wait-4). */
  DEADLOCK: -7,
} as const;

/** What release-4 says first when it found the hold (else NOT_FOUND). */
export const ReleaseCode = {
  FREED: 1,
  STILL_HELD: 0,
} as const;

/** A yes-or-no answer: check-fencing-token-3's `live`, request-id-1's "tied to this request". */
export const ScriptFlag = {
  YES: 1,
  NO: 0,
} as const;

/** What one Redlock master answers (lua/redlock-*.lua): its vote, write or release here or not. */
export const RedlockCode = {
  /** acquire: voted; fence: written; release: released. */
  DONE: 1,
  /** acquire: someone holds it here; fence, renew, release: the vote is gone here. */
  NOT_HERE: 0,
  /** renew: the vote was given back with Release (the holder's word, not an expiry). */
  GIVEN_BACK: -1,
} as const;

/** Why renew-3 renewed nothing (the value after NOT_FOUND). */
export const NotRenewed = {
  EXPIRED: 0,
  TAKEN: 1,
  /** The grant lives, but the renewing Hold stream's own hold was given back with Release. */
  HOLD_RELEASED: 2,
} as const;

// MOVED and ASK reach us only from a pipeline whose other replies succeeded (a Cluster whose slot
// map is stale after a failover): ioredis follows them for single commands.
// MASTERCHANGED: a granting script reached a node other than the master checked for its slot
// (lua/includes/expect-master.lua).
const REDIS_BUSY = /^(LOADING|BUSY|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|READONLY|NOREPLICAS|MOVED|ASK|MASTERCHANGED)\b/;

/**
 * Turns anything a Redis call threw into a LockError: connection trouble and transient server
 * states become 'unavailable'; a script or protocol error is a bug and is passed on unchanged.
 */
export function fromRedisError(err: unknown, describe?: DescribeUnavailable): unknown {
  if (err instanceof LockError) return err;
  const e = err as { name?: string; message?: string };
  const message = e?.message ?? String(err);
  if (e?.name === 'ReplyError' && !REDIS_BUSY.test(message)) return err;
  return new LockError('unavailable', describe ? describe(err) : `Redis is unavailable: ${message}`);
}

/** Says where Redis is and what is wrong with it, in words, for a client's UNAVAILABLE. */
export type DescribeUnavailable = (err: unknown) => string;
