// The errors the SDK adds to grpc-js's ServiceError (which it passes through unchanged).
import { status, type Metadata, type ServiceError } from '@grpc/grpc-js';
import type { LostReason } from '../../gen/holdfast/v1/lock';

/** The lock was not granted: it stayed taken for the whole wait. */
export class NotAcquiredError extends Error {
  override readonly name = 'NotAcquiredError';
  constructor(
    readonly lockName: string,
    readonly waitMs: number,
  ) {
    super(`lock "${lockName}" was not acquired within ${waitMs} ms`);
  }
}

/**
 * Where a lease loss was noticed: the server said so (`lost` event), the Hold stream ended
 * without a release, or no renewal was confirmed in time (the local deadline).
 */
export type LeaseLossSource = 'server' | 'stream' | 'deadline';

/** The reason a lease's AbortSignal carries: the lock may be someone else's now. */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
  constructor(
    readonly lockName: string,
    readonly reason: string,
    readonly source: LeaseLossSource,
    /** The server's LostReason, for source 'server'. */
    readonly code?: LostReason,
  ) {
    super(`lost lock "${lockName}": ${reason}`);
  }
}

/** What a failed call or session operation said: a ServiceError, or a session's OpError with metadata. */
export interface ErrorStatus {
  code: number;
  details: string;
  metadata?: Metadata;
}

/**
 * True when the status is a deadlock's (docs/deadlocks.md; clients/conformance/deadlock.json):
 * ABORTED, and the trailing metadata `holdfast-reason: deadlock` or (a session operation's error,
 * which has no metadata) a message starting `deadlock: `. A lost lease is ABORTED too, and is not.
 */
export function isDeadlock(error: ErrorStatus): boolean {
  if (error.code !== status.ABORTED) return false;
  return error.metadata?.get('holdfast-reason').includes('deadlock') === true || error.details.startsWith('deadlock: ');
}

/**
 * The wait was ended to break a deadlock: the message names the cycle (each lock, its holder's
 * owner, what that owner waits for). Give back what you hold, pause briefly, and try again.
 * Still a ServiceError in shape (code ABORTED, details, metadata) for code that checks codes.
 */
export class DeadlockError extends Error {
  override readonly name = 'DeadlockError';
  readonly code = status.ABORTED;
  readonly details: string;
  readonly metadata?: Metadata;
  constructor(
    /** The lock the ended call waited for, when the call was for one lock. */
    readonly lockName: string | undefined,
    error: ErrorStatus,
  ) {
    super(error.details, { cause: error });
    this.details = error.details;
    this.metadata = error.metadata;
  }
}

/** A DeadlockError for a deadlock's status, else the error unchanged (one rule for every call). */
export function deadlockOr(err: ServiceError, lockName?: string): ServiceError | DeadlockError {
  return isDeadlock(err) ? new DeadlockError(lockName, err) : err;
}
