// The one table from lock engine errors to gRPC status codes. Anything else is a bug: it
// becomes INTERNAL and is logged once, here.
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { LockError, type LockErrorKind } from '../engine/errors';

const STATUS_OF: Record<LockErrorKind, status> = {
  invalid: status.INVALID_ARGUMENT,
  not_found: status.NOT_FOUND,
  conflict: status.FAILED_PRECONDITION,
  unavailable: status.UNAVAILABLE,
  timeout: status.DEADLINE_EXCEEDED,
  lost: status.ABORTED,
  exhausted: status.RESOURCE_EXHAUSTED,
};

export function serviceError(code: status, details: string): ServiceError {
  return Object.assign(new Error(details), { code, details, metadata: new Metadata() });
}

export function toServiceError(err: unknown, log: (err: unknown) => void): ServiceError {
  if (err instanceof LockError) return serviceError(STATUS_OF[err.kind], err.message);
  log(err);
  return serviceError(status.INTERNAL, 'internal error');
}
