// The errors the SDK adds to grpc-js's ServiceError (which it passes through unchanged).
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
