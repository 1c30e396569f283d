// The lock operations as both the unary RPCs and a Session's operations run them: check the
// request, call the engine, build the response. One place, so a session operation answers exactly
// as its unary twin does.
import type {
  AcquireResponse,
  CheckFencingTokenRequest,
  CheckFencingTokenResponse,
  InspectRequest,
  InspectResponse,
  ReleaseRequest,
  ReleaseResponse,
  RenewRequest,
  RenewResponse,
  SetValueRequest,
  SetValueResponse,
} from '../../gen/holdfast/v1/lock';
import type { LockBackend } from '../engine/backend';
import { LockError } from '../engine/errors';
import type { AcquireParams } from '../engine/types';
import { checkFencingToken, checkHoldId, checkName, checkToken, checkTtl, checkValue } from './requests';
import type { SignFence } from '../fencing/fence';
import { fenceOf, grantFields, holderFields } from './responses';

export const NOT_ACQUIRED: AcquireResponse = {
  acquired: false,
  token: '',
  fencingToken: '0',
  ttlMs: '0',
  holdCount: 0,
  leaseStartedAfterMs: '0',
  signedFence: '',
};

/** Milliseconds from `from` to `at` (performance.now() values), as an int64 field. */
export function msSince(from: number, at: number): string {
  return String(Math.max(0, Math.floor(at - from)));
}

/**
 * An Acquire: the grant, or NOT_ACQUIRED. `left` is asked once the grant is in: a caller that
 * left meanwhile gets nothing, and its grant is given back (a short lease may have ended already).
 * Lease times count from `anchor`, when the caller's request (or session) was received.
 */
export async function acquireLock(
  engine: LockBackend,
  params: AcquireParams,
  anchor: number,
  signal: AbortSignal | undefined,
  left: () => boolean,
  logError: (err: unknown) => void,
  sign?: SignFence,
): Promise<AcquireResponse> {
  const grant = await engine.acquire(params, signal);
  if (!grant) return NOT_ACQUIRED;
  if (left()) {
    await engine.release(params.name, grant.token).catch((err) => {
      if (!(err instanceof LockError && err.kind === 'not_found')) logError(err);
    });
    return NOT_ACQUIRED;
  }
  return {
    acquired: true,
    ...grantFields(grant, fenceOf(sign, params.name, grant.fencingToken, grant)),
    leaseStartedAfterMs: msSince(anchor, grant.leaseStart),
  };
}

export async function releaseLock(engine: LockBackend, req: ReleaseRequest): Promise<ReleaseResponse> {
  const result = await engine.release(checkName(req.name), checkToken(req.token), { holdId: checkHoldId(req.holdId) });
  return { released: result.released, holdCount: result.holdCount };
}

export async function renewLock(engine: LockBackend, req: RenewRequest, sign?: SignFence): Promise<RenewResponse> {
  const name = checkName(req.name);
  const token = checkToken(req.token);
  const ttlMs = checkTtl(req.ttlMs, 0, "the grant's own lease length");
  const leaseStart = performance.now(); // before the renewal is sent: the lease runs at least ttlMs from here
  const result = await engine.renew(name, token, ttlMs);
  const signedFence = result.fencingToken ? fenceOf(sign, name, result.fencingToken, { leaseStart, ttlMs: result.ttlMs }) : '';
  return { ttlMs: String(result.ttlMs), signedFence };
}

export async function inspectLock(engine: LockBackend, req: InspectRequest): Promise<InspectResponse> {
  const info = await engine.inspect(checkName(req.name));
  return {
    name: info.name,
    holders: info.holders.map(holderFields),
    waiters: info.waiters,
    fencingToken: info.fencingToken,
    limit: info.limit,
    grantsResumeInMs: String(info.grantsResumeInMs),
  };
}

export async function checkLockFencingToken(engine: LockBackend, req: CheckFencingTokenRequest): Promise<CheckFencingTokenResponse> {
  const result = await engine.checkFencingToken(checkName(req.name), checkFencingToken(req.fencingToken));
  return { ...result, ttlMs: String(result.ttlMs) };
}

export async function setLockValue(engine: LockBackend, req: SetValueRequest): Promise<SetValueResponse> {
  const result = await engine.setValue(checkName(req.name), checkToken(req.token), checkValue(req.value));
  return { fencingToken: result.fencingToken };
}
