// One operation of a Session, run as its unary twin runs it (operations.ts, requests.ts, hold.ts):
// the same checks, the same engine calls, the same answers and errors. A hold or hold_set is
// taken by the session's lease group (src/engine/lease-group.ts) as a Hold stream's is, and kept
// as one of its sets, reported to the session rather than to a stream.
import type { ServerSurfaceCall } from '@grpc/grpc-js/build/src/server-call';
import type { HoldRequest, HoldSetRequest, SessionRequest, SessionResponse } from '../../gen/holdfast/v1/lock';
import type { LockBackend } from '../engine/backend';
import type { LeaseGroup } from '../engine/lease-group';
import { boundedWait } from './call-context';
import { holdAsk, holdSetAsk, type HoldOptions } from './hold';
import { acquireLock, checkLockFencingToken, inspectLock, msSince, releaseLock, renewLock, setLockValue } from './operations';
import { toAcquireParams } from './requests';
import { fenceOf, grantFields } from './responses';
import { acquireLockSet, memberFields, releaseSetCall } from './lock-set';
import { earliestStart, giveBack } from '../engine/lock-set';

export const OP_KINDS = ['acquire', 'release', 'renew', 'hold', 'inspect', 'setValue', 'checkFencingToken', 'acquireSet', 'releaseSet', 'holdSet'] as const;
export type OpKind = (typeof OP_KINDS)[number];

/** Each operation's unary twin: its role check, its metrics label. */
export const OP_METHOD: Record<OpKind, string> = {
  acquire: 'Acquire',
  release: 'Release',
  renew: 'Renew',
  hold: 'Hold',
  inspect: 'Inspect',
  setValue: 'SetValue',
  checkFencingToken: 'CheckFencingToken',
  acquireSet: 'AcquireSet',
  releaseSet: 'ReleaseSet',
  holdSet: 'HoldSet',
};

export interface OpContext {
  engine: LockBackend;
  options: HoldOptions;
  /** The session's call: its deadline bounds every wait, as a unary call's does. */
  call: ServerSurfaceCall;
  /** When the session began: lease times count from it. */
  anchor: number;
  /** Aborts when the operation is cancelled or the session ends. */
  signal: AbortSignal;
  opId: string;
  /** The session's lease group: what hold and hold_set take joins it. */
  group: LeaseGroup;
  /** The session's identity for deadlock detection, for operations that name no owner (docs/deadlocks.md). */
  waitAs: string;
}

export interface OpResult {
  response: Omit<SessionResponse, 'opId'>;
  /** Gives back what the operation took, for a result nobody may see any more (cancelled meanwhile). */
  undo?(): Promise<unknown>;
}

export async function runOp(kind: OpKind, request: SessionRequest, context: OpContext): Promise<OpResult> {
  const { engine } = context;
  switch (kind) {
    case 'acquire':
      return acquireOp(request, context);
    case 'hold':
      return holdOp(request.hold!, context);
    case 'release':
      return { response: { release: await releaseLock(engine, request.release!) } };
    case 'renew':
      return { response: { renew: await renewLock(engine, request.renew!, context.options.signFence) } };
    case 'inspect':
      return { response: { inspect: await inspectLock(engine, request.inspect!) } };
    case 'setValue':
      return { response: { setValue: await setLockValue(engine, request.setValue!) } };
    case 'checkFencingToken':
      return { response: { checkFencingToken: await checkLockFencingToken(engine, request.checkFencingToken!) } };
    case 'acquireSet':
      return acquireSetOp(request, context);
    case 'releaseSet':
      return { response: { releaseSet: await releaseSetCall(engine, request.releaseSet!) } };
    case 'holdSet':
      return holdSetOp(request.holdSet!, context);
  }
}

async function acquireOp(request: SessionRequest, { engine, options, call, anchor, signal, waitAs }: OpContext): Promise<OpResult> {
  const asked = toAcquireParams(request.acquire!, options.defaultTtlMs);
  const params = { ...asked, waitMs: boundedWait(call, asked.waitMs, options.deadlineMarginMs), waitAs };
  const acquire = await acquireLock(engine, params, anchor, signal, () => signal.aborted, options.logError, options.signFence);
  if (!acquire.acquired) return { response: { acquire } };
  return { response: { acquire }, undo: () => engine.release(params.name, acquire.token).catch(() => {}) };
}

async function acquireSetOp(request: SessionRequest, { engine, options, call, anchor, signal, waitAs }: OpContext): Promise<OpResult> {
  const { response, members } = await acquireLockSet(engine, options, request.acquireSet!, { call, anchor, signal, waitAs });
  return { response: { acquireSet: response }, undo: members && (() => giveBack(engine, members).catch(() => {})) };
}

/** As Hold takes its lock, then kept as one of the session's locks. */
async function holdOp(request: HoldRequest, { options, call, anchor, signal, opId, group, waitAs }: OpContext): Promise<OpResult> {
  const { name, ask } = holdAsk(request, options, call, opId);
  ask.params = { ...ask.params, waitAs };
  const held = await group.hold(name, ask, signal);
  if (!held) return { response: {} }; // cancelled: nothing is held, nobody is answered
  const [{ grant, holdId }] = held.grants;
  // Kept by the session, whose renewals are not re-signed: the fence states no lease end.
  const fields = grantFields(grant, fenceOf(options.signFence, name, grant.fencingToken));
  return { response: { hold: { ...fields, leaseStartedAfterMs: msSince(anchor, grant.leaseStart), holdId } }, undo: () => group.drop(held.set) };
}

/** As HoldSet takes its locks, then each member one of the session's locks; the first member lost ends the set. */
async function holdSetOp(request: HoldSetRequest, { options, call, anchor, signal, opId, group, waitAs }: OpContext): Promise<OpResult> {
  const { names, ask } = holdSetAsk(request, options, call, opId);
  ask.params = { ...ask.params, waitAs };
  const held = await group.holdSet(names, ask, signal);
  if (!held) return { response: {} };
  const members = held.grants.map((m) => memberFields(m, options.signFence, true));
  return { response: { holdSet: { members, leaseStartedAfterMs: msSince(anchor, earliestStart(held.grants)) } }, undo: () => group.drop(held.set) };
}
