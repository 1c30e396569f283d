// The one table from engine errors and lost leases to gRPC status codes (src/transport/status.ts).
import { status } from '@grpc/grpc-js';
import { expect, it } from 'vitest';
import { LockError } from '../../src/engine/errors';
import { lostLeaseError, toServiceError } from '../../src/transport/status';

it('ends a lost lease with ABORTED, or UNAVAILABLE when the server is shutting down, keeping the words', () => {
  for (const reason of ['expired', 'taken', 'backend_unavailable', 'max_hold', 'failover'] as const) {
    expect(lostLeaseError(reason, `lock "a": ${reason}`)).toMatchObject({ code: status.ABORTED, details: `lock "a": ${reason}` });
  }
  expect(lostLeaseError('server_shutdown', 'bye').code).toBe(status.UNAVAILABLE);
});

it('turns each engine error kind into its status, and anything else into INTERNAL logged once', () => {
  const logged: unknown[] = [];
  const log = (err: unknown) => logged.push(err);
  expect(toServiceError(new LockError('not_found', 'gone'), log)).toMatchObject({ code: status.NOT_FOUND, details: 'gone' });
  expect(toServiceError(new LockError('lost', 'lost'), log).code).toBe(status.ABORTED);
  expect(logged).toEqual([]);
  const bug = new Error('a bug');
  expect(toServiceError(bug, log)).toMatchObject({ code: status.INTERNAL, details: 'internal error' });
  expect(logged).toEqual([bug]);
});
