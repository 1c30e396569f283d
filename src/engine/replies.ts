// Script replies in lock terms: a grant read from its reply, and the errors the result codes
// (src/engine/errors.ts ScriptCode) stand for, each worded once.
import { LockError, ScriptCode } from './errors';
import type { Reply } from './store';
import type { Grant } from './types';

export function grantOf(reply: Reply, leaseStart: number, offset = 1): Grant {
  return {
    leaseStart,
    token: String(reply[offset]),
    fencingToken: String(reply[offset + 1]),
    ttlMs: Number(reply[offset + 2]),
    holdCount: Number(reply[offset + 3]),
  };
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

export function conflictError(name: string, reply: Reply, limit: number): LockError {
  if (reply[0] === ScriptCode.REQUEST_ID_REUSED) return requestIdReused();
  if (reply[0] === ScriptCode.TOO_MANY_WAITERS) {
    return new LockError('exhausted', `lock "${name}" has ${reply[1]} waiters queued, the most max-waiters-per-lock allows; try again later`);
  }
  if (reply[0] === ScriptCode.LIMIT_MISMATCH) {
    return new LockError('conflict', `lock "${name}" has limit ${reply[1]} while it has holders or waiters; this request asked for limit ${limit}`);
  }
  return new LockError('conflict', `lock "${name}": this owner holds it shared; upgrading to exclusive is refused (it deadlocks against other readers)`);
}
