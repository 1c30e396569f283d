// One operation of a Session, run as its unary twin runs it (operations.ts, requests.ts, hold.ts):
// the same checks, the same engine calls, the same answers and errors. A hold is kept by the
// engine's watchdog as a Hold stream's is, and reported to the session rather than to a stream.
import type { ServerSurfaceCall } from '@grpc/grpc-js/build/src/server-call';
import type { HoldRequest, HoldSetRequest, SessionRequest, SessionResponse } from '../../gen/holdfast/v1/lock';
import type { LockBackend } from '../engine/backend';
import { newHoldId } from '../engine/engine';
import { LockError } from '../engine/errors';
import type { KeptLease, LeaseEvents, LostReason } from '../engine/types';
import { boundedWait } from './call-context';
import { holdParams, maxHoldOf, type HoldOptions } from './hold';
import { acquireLock, checkLockFencingToken, inspectLock, msSince, releaseLock, renewLock, setLockValue } from './operations';
import { checkMaxHold, toAcquireParams, toSetParams } from './requests';
import { fenceOf, grantFields } from './responses';
import { acquireLockSet, memberFields, releaseSetCall } from './lock-set';
import { acquireSet, earliestStart, giveBack, type SetMemberGrant } from '../engine/lock-set';
import type { Held } from './session-leases';

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
}

/** What the session learns of the locks its holds keep. */
export interface HoldEvents {
  kept(held: Held): void;
  renewed(holdId: string, ttlMs: number, start: number): void;
  lost(holdId: string, reason: LostReason, message: string): void;
  /** A kept lock whose grant was never told to the client leaves the session. */
  dropped(holdId: string): void;
}

export interface OpResult {
  response: Omit<SessionResponse, 'opId'>;
  /** Gives back what the operation took, for a result nobody may see any more (cancelled meanwhile). */
  undo?(): Promise<unknown>;
}

export async function runOp(kind: OpKind, request: SessionRequest, context: OpContext, events: HoldEvents): Promise<OpResult> {
  const { engine } = context;
  switch (kind) {
    case 'acquire':
      return acquireOp(request, context);
    case 'hold':
      return holdOp(request.hold!, context, events);
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
      return holdSetOp(request.holdSet!, context, events);
  }
}

async function acquireOp(request: SessionRequest, { engine, options, call, anchor, signal }: OpContext): Promise<OpResult> {
  const asked = toAcquireParams(request.acquire!, options.defaultTtlMs);
  const params = { ...asked, waitMs: boundedWait(call, asked.waitMs, options.deadlineMarginMs) };
  const acquire = await acquireLock(engine, params, anchor, signal, () => signal.aborted, options.logError, options.signFence);
  if (!acquire.acquired) return { response: { acquire } };
  return { response: { acquire }, undo: () => engine.release(params.name, acquire.token).catch(() => {}) };
}

async function acquireSetOp(request: SessionRequest, { engine, options, call, anchor, signal }: OpContext): Promise<OpResult> {
  const { response, members } = await acquireLockSet(engine, options, request.acquireSet!, { call, anchor, signal });
  return { response: { acquireSet: response }, undo: members && (() => giveBack(engine, members).catch(() => {})) };
}

/** As Hold takes its lock, then kept for the session. */
async function holdOp(request: HoldRequest, { engine, options, call, anchor, signal, opId }: OpContext, events: HoldEvents): Promise<OpResult> {
  const asked = toAcquireParams(request, options.defaultTtlMs);
  const maxHoldMs = maxHoldOf(checkMaxHold(request.maxHoldMs), options.maxHoldMs);
  const params = { ...holdParams(asked, boundedWait(call, asked.waitMs, options.deadlineMarginMs), maxHoldMs), holdId: newHoldId() };
  const { name, holdId } = params;
  const grant = await engine.acquire(params, signal);
  if (!grant) {
    if (signal.aborted) return { response: {} };
    throw new LockError('timeout', `lock "${name}" was not acquired within ${asked.waitMs} ms`);
  }
  if (signal.aborted) return { response: {}, undo: () => engine.release(name, grant.token, { holdId }).catch(() => {}) };
  const held = new SessionHold(holdId, opId, name, grant.leaseStart, grant.ttlMs, events);
  const lease = engine.keep(
    {
      name,
      token: grant.token,
      holdId,
      ttlMs: params.ttlMs,
      maxHoldMs,
      lockDelayMs: options.lockDelayMs,
      releaseOnDisconnect: options.releaseOnDisconnect || request.releaseOnDisconnect,
    },
    held,
    grant.leaseStart,
    grant.ttlMs,
  );
  held.lease = lease;
  events.kept(held);
  return {
    // Kept by the session, whose renewals are not re-signed: the fence states no lease end.
    response: {
      hold: { ...grantFields(grant, fenceOf(options.signFence, name, grant.fencingToken)), leaseStartedAfterMs: msSince(anchor, grant.leaseStart), holdId },
    },
    undo: () => {
      events.dropped(holdId);
      return lease.letGo();
    },
  };
}

/** As HoldSet takes its locks, then each member kept for the session; the first member lost ends the set. */
async function holdSetOp(request: HoldSetRequest, { engine, options, call, anchor, signal, opId }: OpContext, events: HoldEvents): Promise<OpResult> {
  const { names, params: asked } = toSetParams(request, options.defaultTtlMs);
  const maxHoldMs = maxHoldOf(checkMaxHold(request.maxHoldMs), options.maxHoldMs);
  const params = holdParams(asked, boundedWait(call, asked.waitMs, options.deadlineMarginMs), maxHoldMs);
  const members = await acquireSet(engine, names, params, signal, newHoldId);
  if (!members) {
    if (signal.aborted) return { response: {} };
    throw new LockError('timeout', `the set of ${names.length} locks was not acquired within ${asked.waitMs} ms`);
  }
  if (signal.aborted) return { response: {}, undo: () => giveBack(engine, members).catch(() => {}) };
  const set = new SessionHoldSet(events, options.releaseOnDisconnect);
  for (const member of members) set.keep(engine, member, opId, { ttlMs: params.ttlMs, maxHoldMs, lockDelayMs: options.lockDelayMs });
  return {
    response: {
      holdSet: { members: members.map((m) => memberFields(m, options.signFence, true)), leaseStartedAfterMs: msSince(anchor, earliestStart(members)) },
    },
    undo: () => set.dropAll(),
  };
}

/**
 * A lock the session holds, and the watchdog's listener for its lease: a class holding only its
 * own data and the session's one HoldEvents, so a held lock keeps no closure, and nothing of the
 * hold operation that took it (its request, its AbortSignal, its span) once it was answered.
 */
class SessionHold implements Held, LeaseEvents {
  lease: KeptLease = NOT_KEPT_YET;

  constructor(
    readonly holdId: string,
    readonly opId: string,
    readonly name: string,
    public start: number,
    public ttlMs: number,
    private readonly events: HoldEvents,
  ) {}

  onRenewed(ttlMs: number, start: number): void {
    this.events.renewed(this.holdId, ttlMs, start);
  }

  onLost(reason: LostReason, message: string): void {
    this.events.lost(this.holdId, reason, message);
  }
}

const NOT_KEPT_YET: KeptLease = { letGo: async () => {}, abandon: async () => {} };

/**
 * The members of one hold_set: each is a lock of the session, renewed and reported with the
 * others; the first one lost ends the set, as it ends a HoldSet stream. The rest leave the session
 * and are given back at once when the member was released with its token (the holder's word),
 * otherwise once their leases have run out; one `lost` names the member.
 */
class SessionHoldSet implements HoldEvents {
  private readonly members: SessionHold[] = [];
  private over = false;

  constructor(
    private readonly events: HoldEvents,
    private readonly releaseOnDisconnect: boolean,
  ) {}

  keep(engine: LockBackend, member: SetMemberGrant, opId: string, keep: { ttlMs: number; maxHoldMs: number; lockDelayMs: number }): void {
    const { name, grant, holdId } = member;
    const held = new SessionHold(holdId, opId, name, grant.leaseStart, grant.ttlMs, this);
    held.lease = engine.keep({ name, token: grant.token, holdId, ...keep, releaseOnDisconnect: this.releaseOnDisconnect }, held, grant.leaseStart, grant.ttlMs);
    this.members.push(held);
    this.events.kept(held);
  }

  kept(held: Held): void {
    this.events.kept(held);
  }

  renewed(holdId: string, ttlMs: number, start: number): void {
    this.events.renewed(holdId, ttlMs, start);
  }

  lost(holdId: string, reason: LostReason, message: string): void {
    if (this.over) return;
    this.over = true;
    const byHolder = reason === 'released' || this.releaseOnDisconnect;
    const lost = this.members.find((m) => m.holdId === holdId);
    for (const other of this.members) {
      if (other === lost) continue;
      this.events.dropped(other.holdId);
      void (byHolder ? other.lease.letGo() : other.lease.abandon());
    }
    this.events.lost(holdId, reason, lost ? `lock "${lost.name}": ${message}` : message);
  }

  dropped(holdId: string): void {
    this.events.dropped(holdId);
  }

  /** The set's answer came too late for anyone to see it: every member leaves and is given back. */
  async dropAll(): Promise<void> {
    this.over = true;
    for (const member of this.members) this.events.dropped(member.holdId);
    await Promise.all(this.members.map((m) => m.lease.letGo()));
  }
}
