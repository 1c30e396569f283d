// The one table from lock engine errors to gRPC status codes. Anything else is a bug: it
// becomes INTERNAL and is logged once, here.
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { LockError, type LockErrorKind } from '../engine/errors';
import type { LostReason } from '../engine/types';

const STATUS_OF: Record<LockErrorKind, status> = {
  invalid: status.INVALID_ARGUMENT,
  not_found: status.NOT_FOUND,
  conflict: status.FAILED_PRECONDITION,
  unavailable: status.UNAVAILABLE,
  timeout: status.DEADLINE_EXCEEDED,
  lost: status.ABORTED,
  exhausted: status.RESOURCE_EXHAUSTED,
  deadlock: status.ABORTED,
};

/**
 * How a Hold or HoldSet stream ends when its lease is lost other than by its holder's word:
 * ABORTED (the lock may be held by someone else now), or UNAVAILABLE when this server is
 * shutting down (another server can take the client's next call).
 */
const LOST_STATUS: Record<Exclude<LostReason, 'released'>, status> = {
  expired: status.ABORTED,
  taken: status.ABORTED,
  backend_unavailable: status.ABORTED,
  max_hold: status.ABORTED,
  failover: status.ABORTED,
  server_shutdown: status.UNAVAILABLE,
};

export function lostLeaseError(reason: Exclude<LostReason, 'released'>, details: string): ServiceError {
  return serviceError(LOST_STATUS[reason], details);
}

export function serviceError(code: status, details: string): ServiceError {
  return Object.assign(new Error(details), { code, details, metadata: new Metadata() });
}

/**
 * Trailing metadata that tells a deadlock's ABORTED from a lost lease's without reading the
 * message: `holdfast-reason: deadlock` (a session's operation has no metadata: its message starts
 * `deadlock: `). The SDKs raise their DeadlockError on either.
 */
export const REASON_KEY = 'holdfast-reason';

export function toServiceError(err: unknown, log: (err: unknown) => void): ServiceError {
  if (err instanceof LockError && err.kind === 'deadlock') {
    const error = serviceError(STATUS_OF.deadlock, err.message);
    error.metadata.set(REASON_KEY, 'deadlock');
    return error;
  }
  if (err instanceof LockError) return serviceError(STATUS_OF[err.kind], err.message);
  log(err);
  return serviceError(status.INTERNAL, 'internal error');
}
