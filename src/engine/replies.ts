// A store's answers in lock terms: a grant with its lease start, and the errors its refusals
// stand for, each worded once.
import { LockError } from './errors';
import type { GrantRecord, Refusal } from './store';
import type { Grant } from './types';

/** A grant whose lease runs no earlier than `leaseStart` (performance.now() before it was asked for). */
export function grantOf(record: GrantRecord, leaseStart: number): Grant {
  return { leaseStart, token: record.token, fencingToken: record.fencingToken, ttlMs: record.ttlMs, holdCount: record.holdCount };
}

export function notHeld(name: string): LockError {
  return new LockError('not_found', `lock "${name}": the token holds nothing (wrong, expired or already released)`);
}

export function requestIdReused(): LockError {
  return new LockError(
    'conflict',
    'request_id was already used for a different request (another owner, lock, mode, limit or ttl_ms); use a fresh, unguessable request_id for each request',
  );
}

export function conflictError(name: string, refusal: Refusal, limit: number): LockError {
  switch (refusal.why) {
    case 'request_id_reused':
      return requestIdReused();
    case 'too_many_waiters':
      return new LockError('exhausted', `lock "${name}" has ${refusal.maxWaiters} waiters queued, the most max-waiters-per-lock allows; try again later`);
    case 'limit_mismatch':
      return new LockError('conflict', `lock "${name}" has limit ${refusal.limit} while it has holders or waiters; this request asked for limit ${limit}`);
    case 'upgrade':
      return new LockError('conflict', `lock "${name}": this owner holds it shared; upgrading to exclusive is refused (it deadlocks against other readers)`);
  }
}
