// gRPC handlers of holdfast.v1.LockService: check the request, call the engine, build the
// response. Errors go through the one status table.
import type { sendUnaryData, ServerUnaryCall } from '@grpc/grpc-js';
import type { LockServiceServer } from '../../gen/holdfast/v1/lock';
import type { LockBackend } from '../engine/backend';
import { boundedWait, callScope } from './call-context';
import { toAcquireParams } from './requests';
import { toServiceError } from './status';
import { acquireLock, checkLockFencingToken, inspectLock, releaseLock, renewLock, setLockValue } from './operations';
import { holdHandler } from './hold';
import { sessionHandler, type SessionOptions } from './session';
import { acquireSetHandler, holdSetHandler, releaseSetHandler } from './lock-set';
import { watchHandler } from './watch';

export interface ServiceOptions extends SessionOptions {
  defaultTtlMs: number;
  /** Stop waiting this long before the call's deadline so the answer still arrives. */
  deadlineMarginMs: number;
  logError(err: unknown): void;
}

function unary<Req, Res>(logError: (err: unknown) => void, handle: (req: Req, call: ServerUnaryCall<Req, Res>) => Promise<Res>) {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
    handle(call.request, call).then(
      (response) => callback(null, response),
      (err) => callback(toServiceError(err, logError)),
    );
  };
}

export function lockService(engine: LockBackend, options: ServiceOptions): LockServiceServer {
  const { logError } = options;
  return {
    acquire: unary(logError, async (req, call) => {
      const receivedAt = performance.now();
      const asked = toAcquireParams(req, options.defaultTtlMs);
      const params = { ...asked, waitMs: boundedWait(call, asked.waitMs, options.deadlineMarginMs) };
      // A try-once call needs no AbortSignal (nothing to stop early): whether its client left
      // is read once the answer is in, which saves a listener and a controller on the hot path.
      const scope = params.waitMs > 0 ? callScope(call) : undefined;
      const left = () => (scope ? scope.signal.aborted : call.cancelled);
      try {
        return await acquireLock(engine, params, receivedAt, scope?.signal, left, logError, options.signFence);
      } finally {
        scope?.finish();
      }
    }),

    release: unary(logError, (req) => releaseLock(engine, req)),
    renew: unary(logError, (req) => renewLock(engine, req, options.signFence)),
    inspect: unary(logError, (req) => inspectLock(engine, req)),
    checkFencingToken: unary(logError, (req) => checkLockFencingToken(engine, req)),
    setValue: unary(logError, (req) => setLockValue(engine, req)),

    hold: holdHandler(engine, options),

    watch: watchHandler(engine, logError),

    acquireSet: acquireSetHandler(engine, options),
    releaseSet: releaseSetHandler(engine, logError),
    holdSet: holdSetHandler(engine, options),
    session: sessionHandler(engine, options),
  };
}
