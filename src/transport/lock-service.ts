// gRPC handlers of holdfast.v1.LockService: check the request, call the engine, build the
// response. Errors go through the one status table.
import type { sendUnaryData, ServerUnaryCall } from '@grpc/grpc-js';
import type { LockServiceServer } from '../../clients/ts/gen/holdfast/v1/lock';
import type { LockBackend } from '../engine/backend';
import { boundedWait, callScope } from './call-context';
import { checkFencingToken, checkHoldId, checkName, checkToken, checkTtl, checkValue, toAcquireParams } from './requests';
import { grantFields, holderFields } from './responses';
import { toServiceError } from './status';
import { LockError } from '../engine/errors';
import { holdHandler, type HoldOptions } from './hold';
import { acquireSetHandler, holdSetHandler, releaseSetHandler } from './lock-set';
import { watchHandler } from './watch';

export interface ServiceOptions extends HoldOptions {
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

const NOT_ACQUIRED = { acquired: false, token: '', fencingToken: '0', ttlMs: '0', holdCount: 0, leaseStartedAfterMs: '0' };

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
      const grant = await engine.acquire(params, scope?.signal);
      scope?.finish();
      if (!grant) return NOT_ACQUIRED;
      if (scope ? scope.signal.aborted : call.cancelled) {
        // The client left while the grant was on its way. A short lease may have ended already.
        await engine.release(params.name, grant.token).catch((err) => {
          if (!(err instanceof LockError && err.kind === 'not_found')) logError(err);
        });
        return NOT_ACQUIRED;
      }
      const leaseStartedAfterMs = String(Math.max(0, Math.floor(grant.leaseStart - receivedAt)));
      return { acquired: true, ...grantFields(grant), leaseStartedAfterMs };
    }),

    release: unary(logError, async (req) => {
      const result = await engine.release(checkName(req.name), checkToken(req.token), { holdId: checkHoldId(req.holdId) });
      return { released: result.released, holdCount: result.holdCount };
    }),

    renew: unary(logError, async (req) => {
      const name = checkName(req.name);
      const token = checkToken(req.token);
      const ttlMs = checkTtl(req.ttlMs, 0, "the grant's own lease length");
      const result = await engine.renew(name, token, ttlMs);
      return { ttlMs: String(result.ttlMs) };
    }),

    inspect: unary(logError, async (req) => {
      const info = await engine.inspect(checkName(req.name));
      return {
        name: info.name,
        holders: info.holders.map(holderFields),
        waiters: info.waiters,
        fencingToken: info.fencingToken,
        limit: info.limit,
        grantsResumeInMs: String(info.grantsResumeInMs),
      };
    }),

    checkFencingToken: unary(logError, async (req) => {
      const result = await engine.checkFencingToken(checkName(req.name), checkFencingToken(req.fencingToken));
      return { ...result, ttlMs: String(result.ttlMs) };
    }),

    setValue: unary(logError, async (req) => {
      const result = await engine.setValue(checkName(req.name), checkToken(req.token), checkValue(req.value));
      return { fencingToken: result.fencingToken };
    }),

    hold: holdHandler(engine, options),

    watch: watchHandler(engine, logError),

    acquireSet: acquireSetHandler(engine, options),
    releaseSet: releaseSetHandler(engine, logError),
    holdSet: holdSetHandler(engine, options),
  };
}
