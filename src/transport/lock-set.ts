// AcquireSet, ReleaseSet and HoldSet: several locks all or nothing (src/engine/lock-set.ts takes
// them in canonical order). A HoldSet keeps each member like a Hold; the first member lost ends
// the set, and the others are given back as a Hold's would be (at once on the holder's word,
// otherwise after the lease its client was told of). A release by the holder (ReleaseSet, or a
// Release of any member) ends the stream with OK, as it ends a Hold's.
import type { sendUnaryData, ServerUnaryCall, ServerWritableStream } from '@grpc/grpc-js';
import type { ServerSurfaceCall } from '@grpc/grpc-js/build/src/server-call';
import type { AcquireSetRequest, AcquireSetResponse, HoldSetRequest, HoldSetResponse, ReleaseSetRequest, ReleaseSetResponse } from '../../gen/holdfast/v1/lock';
import type { LockBackend } from '../engine/backend';
import { newHoldId } from '../engine/engine';
import { LockError } from '../engine/errors';
import { acquireSet, earliestStart, giveBack, refreshSet, type SetMemberGrant } from '../engine/lock-set';
import type { KeptLease } from '../engine/types';
import { boundedWait, callScope } from './call-context';
import { LOST_CODE, holdParams, maxHoldOf, type HoldOptions } from './hold';
import { msSince } from './operations';
import { checkMaxHold, toReleaseSetMembers, toSetParams } from './requests';
import { lostLeaseError, toServiceError } from './status';
import { fenceOf } from './responses';
import type { SignFence } from '../fencing/fence';

/** A member as a SetMember; `held`: kept by a session, its fence states no lease end. */
export function memberFields(member: SetMemberGrant, sign: SignFence | undefined, held = false) {
  const { name, grant, holdId } = member;
  const signedFence = fenceOf(sign, name, grant.fencingToken, held ? undefined : grant);
  return { name, token: grant.token, fencingToken: grant.fencingToken, ttlMs: String(grant.ttlMs), holdId, signedFence };
}

const NOT_ACQUIRED: AcquireSetResponse = { acquired: false, members: [], leaseStartedAfterMs: '0' };

export function acquireSetHandler(backend: LockBackend, options: HoldOptions) {
  return (call: ServerUnaryCall<AcquireSetRequest, AcquireSetResponse>, callback: sendUnaryData<AcquireSetResponse>) => {
    acquireSetCall(backend, options, call).then(
      (response) => callback(null, response),
      (err) => callback(toServiceError(err, options.logError)),
    );
  };
}

async function acquireSetCall(backend: LockBackend, options: HoldOptions, call: ServerUnaryCall<AcquireSetRequest, AcquireSetResponse>) {
  const receivedAt = performance.now();
  const { signal, finish } = callScope(call);
  return (await acquireLockSet(backend, options, call.request, { call, anchor: receivedAt, signal, finish })).response;
}

export interface SetCallContext {
  /** Its deadline bounds the wait. */
  call: ServerSurfaceCall;
  /** lease_started_after_ms counts from here: the request's arrival, or its session's start. */
  anchor: number;
  /** Aborts when the caller is gone: a set granted meanwhile is given back. */
  signal: AbortSignal;
  /** Called once the set is in, before the last look at `signal`. */
  finish?(): void;
}

/** An AcquireSet, as the unary call and a session's acquire_set run it; `members` is what it holds. */
export async function acquireLockSet(
  backend: LockBackend,
  options: HoldOptions,
  request: AcquireSetRequest,
  { call, anchor, signal, finish }: SetCallContext,
): Promise<{ response: AcquireSetResponse; members?: SetMemberGrant[] }> {
  const { names, params: asked } = toSetParams(request, options.defaultTtlMs);
  const params = { ...asked, waitMs: boundedWait(call, asked.waitMs, options.deadlineMarginMs) };
  const members = await acquireSet(backend, names, params, signal);
  if (!members) return { response: NOT_ACQUIRED };
  try {
    await refreshSet(backend, members, params.ttlMs);
  } catch (err) {
    await giveBack(backend, members);
    throw err;
  }
  finish?.();
  if (signal.aborted) {
    await giveBack(backend, members); // the client left while the set was on its way
    return { response: NOT_ACQUIRED };
  }
  return {
    response: { acquired: true, members: members.map((m) => memberFields(m, options.signFence)), leaseStartedAfterMs: msSince(anchor, earliestStart(members)) },
    members,
  };
}

export function releaseSetHandler(backend: LockBackend, logError: (err: unknown) => void) {
  return (call: ServerUnaryCall<ReleaseSetRequest, ReleaseSetResponse>, callback: sendUnaryData<ReleaseSetResponse>) => {
    releaseSetCall(backend, call.request).then(
      (response) => callback(null, response),
      (err) => callback(toServiceError(err, logError)),
    );
  };
}

/** A ReleaseSet, as the unary call and a session's release_set run it. */
export async function releaseSetCall(backend: LockBackend, request: ReleaseSetRequest): Promise<ReleaseSetResponse> {
  const members = toReleaseSetMembers(request);
  const notHeld = await giveBack(backend, members);
  return { released: members.length - notHeld.length, notHeld };
}

type HoldSetCall = ServerWritableStream<HoldSetRequest, HoldSetResponse>;

export function holdSetHandler(backend: LockBackend, options: HoldOptions) {
  return (call: HoldSetCall) => {
    holdSet(backend, options, call).catch((err) => call.emit('error', toServiceError(err, options.logError)));
  };
}

async function holdSet(backend: LockBackend, options: HoldOptions, call: HoldSetCall): Promise<void> {
  const receivedAt = performance.now();
  const sinceRequest = (at: number) => String(Math.max(0, Math.floor(at - receivedAt)));
  const { names, params: asked } = toSetParams(call.request, options.defaultTtlMs);
  const maxHoldMs = maxHoldOf(checkMaxHold(call.request.maxHoldMs), options.maxHoldMs);
  const params = holdParams(asked, boundedWait(call, asked.waitMs, options.deadlineMarginMs), maxHoldMs);
  const { signal, cancelledByClient, finish } = callScope(call);
  const members = await acquireSet(backend, names, params, signal, newHoldId);
  if (signal.aborted) {
    if (members) await giveBack(backend, members);
    return;
  }
  if (!members) {
    finish();
    throw new LockError('timeout', `the set of ${names.length} locks was not acquired within ${asked.waitMs} ms`);
  }
  call.write({ acquired: { members: members.map((m) => memberFields(m, options.signFence)), leaseStartedAfterMs: sinceRequest(earliestStart(members)) } });

  // The set's lease is its earliest member's: a renewal is reported when that one moves forward.
  const ends = new Map(members.map((m) => [m.name, { leaseStart: m.grant.leaseStart, ttlMs: m.grant.ttlMs }]));
  let reported = Math.min(...[...ends.values()].map((e) => e.leaseStart + e.ttlMs));
  let over = false;
  const leases = new Map<string, KeptLease>();
  const endOthers = (lost: string, byHolder: boolean) => {
    for (const [name, lease] of leases) if (name !== lost) void (byHolder ? lease.letGo() : lease.abandon());
  };
  for (const member of members) {
    const lease = backend.keep(
      {
        name: member.name,
        token: member.grant.token,
        holdId: member.holdId,
        ttlMs: params.ttlMs,
        maxHoldMs,
        lockDelayMs: options.lockDelayMs,
        releaseOnDisconnect: options.releaseOnDisconnect,
      },
      {
        onRenewed: (ttlMs, leaseStart) => {
          if (over) return;
          ends.set(member.name, { leaseStart, ttlMs });
          const earliest = [...ends.values()].reduce((a, b) => (a.leaseStart + a.ttlMs <= b.leaseStart + b.ttlMs ? a : b));
          if (earliest.leaseStart + earliest.ttlMs <= reported) return;
          reported = earliest.leaseStart + earliest.ttlMs;
          // Every member's fence, re-signed with its own lease end, in the set's canonical order.
          const signedFences = options.signFence ? members.map((m) => fenceOf(options.signFence, m.name, m.grant.fencingToken, ends.get(m.name))) : [];
          call.write({ renewed: { ttlMs: String(earliest.ttlMs), leaseStartedAfterMs: sinceRequest(earliest.leaseStart), signedFences } });
        },
        onLost: (reason, message) => {
          if (over) return;
          over = true;
          finish();
          // A member released with its token is the holder's own word: the rest go at once too,
          // and the stream ends normally (OK), as a released Hold's does: nothing was lost.
          endOthers(member.name, reason === 'released' || options.releaseOnDisconnect);
          if (reason === 'released') return void call.end();
          call.write({ lost: { reason: `lock "${member.name}": ${message}`, code: LOST_CODE[reason], name: member.name } });
          call.emit('error', lostLeaseError(reason, `the set lost lock "${member.name}": ${message}`));
        },
      },
      member.grant.leaseStart,
      member.grant.ttlMs,
    );
    leases.set(member.name, lease);
  }
  signal.addEventListener('abort', () => {
    if (over) return;
    over = true;
    endOthers('', cancelledByClient());
  });
}
