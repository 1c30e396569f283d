// The SDK's option objects and how they become request fields (int64 fields are decimal strings).
import { LockMode, type AcquireRequest, type HoldRequest } from '../../gen/holdfast/v1/lock';

export interface LockOptions {
  /** Lease length in ms (10 .. 86 400 000); unset or 0: the server's default. */
  ttlMs?: number;
  /** How long to wait in the queue in ms; unset or 0: try once. */
  waitMs?: number;
  /** Who asks; the same non-empty owner re-enters a lock it holds (hold count + 1). */
  owner?: string;
  /** Take the lock shared (read lock) instead of exclusive. */
  shared?: boolean;
  /** Counting semaphore size: up to `limit` holders at once; unset, 0 or 1: a plain lock. */
  limit?: number;
  /** A value the grant publishes to watchers (at most 1024 bytes), e.g. a leader's address. */
  value?: string;
}

export interface AcquireOptions extends LockOptions {
  /** Idempotency key: a retried acquire with the same id gets the same live grant back. */
  requestId?: string;
}

export interface HoldOptions extends LockOptions {
  /** Longest time the server keeps the lease, in ms; unset or 0: the server's cap. */
  maxHoldMs?: number;
  /** Stops waiting for the lock (the returned promise rejects with the signal's reason). */
  signal?: AbortSignal;
  /**
   * Opt-in to the old fast release: the server frees the lock the moment the stream ends for any
   * reason (a lost connection too), not after the lease runs out. This gives up the guarantee that
   * a holder that is only paused or cut off never believes it holds a lock someone else has.
   * Default false.
   */
  releaseOnDisconnect?: boolean;
}

/** A non-negative whole number as an int64 field, or a RangeError naming the option. */
export function int64Field(option: string, value: number | undefined): string {
  if (value === undefined) return '0';
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${option} must be a non-negative whole number, got ${value}`);
  return String(value);
}

export function lockFields(name: string, options: LockOptions) {
  return {
    name,
    owner: options.owner ?? '',
    ttlMs: int64Field('ttlMs', options.ttlMs),
    waitTimeoutMs: int64Field('waitMs', options.waitMs),
    mode: options.shared ? LockMode.LOCK_MODE_SHARED : LockMode.LOCK_MODE_UNSPECIFIED,
    limit: options.limit ?? 0,
    value: options.value ?? '',
  };
}

export function acquireRequest(name: string, options: AcquireOptions): AcquireRequest {
  return { ...lockFields(name, options), requestId: options.requestId ?? '' };
}

export function holdRequest(name: string, options: HoldOptions): HoldRequest {
  return {
    ...lockFields(name, options),
    maxHoldMs: int64Field('maxHoldMs', options.maxHoldMs),
    releaseOnDisconnect: options.releaseOnDisconnect ?? false,
  };
}
