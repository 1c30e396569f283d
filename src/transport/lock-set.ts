// AcquireSet, ReleaseSet and HoldSet: several locks all or nothing (src/engine/lock-set.ts takes
// them in canonical order). A HoldSet is a Hold stream whose lease group keeps N members
// (hold.ts keepStream, src/engine/lease-group.ts): the first member lost ends the set, and the
// others are given back as a Hold's would be (at once on the holder's word, otherwise after the
// lease its client was told of). A release by the holder (ReleaseSet, or a Release of any member)
// ends the stream with OK, as it ends a Hold's.
import type { sendUnaryData, ServerUnaryCall, ServerWritableStream } from '@grpc/grpc-js';
import type { ServerSurfaceCall } from '@grpc/grpc-js/build/src/server-call';
import type { AcquireSetRequest, AcquireSetResponse, HoldSetRequest, HoldSetResponse, ReleaseSetRequest, ReleaseSetResponse } from '../../gen/holdfast/v1/lock';
import type { LockBackend } from '../engine/backend';
import type { HeldSet } from '../engine/lease-group';
import { acquireSet, earliestStart, giveBack, refreshSet, type SetMemberGrant } from '../engine/lock-set';
import { boundedWait, callScope } from './call-context';
import { holdSetAsk, keepStream, type HoldOptions } from './hold';
import { msSince } from './operations';
import { toReleaseSetMembers, toSetParams } from './requests';
import { toServiceError } from './status';
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
  /** A session's identity for deadlock detection (AcquireParams.waitAs). */
  waitAs?: string;
}

/** An AcquireSet, as the unary call and a session's acquire_set run it; `members` is what it holds. */
export async function acquireLockSet(
  backend: LockBackend,
  options: HoldOptions,
  request: AcquireSetRequest,
  { call, anchor, signal, finish, waitAs }: SetCallContext,
): Promise<{ response: AcquireSetResponse; members?: SetMemberGrant[] }> {
  const { names, params: asked } = toSetParams(request, options.defaultTtlMs);
  const params = { ...asked, waitMs: boundedWait(call, asked.waitMs, options.deadlineMarginMs), waitAs };
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
  const { names, ask } = holdSetAsk(call.request, options, call);
  const acquired = ({ grants }: HeldSet): HoldSetResponse => {
    const members = grants.map((m) => memberFields(m, options.signFence));
    return { acquired: { members, leaseStartedAfterMs: msSince(receivedAt, earliestStart(grants)) } };
  };
  await keepStream(backend, options, call, receivedAt, (group, signal) => group.holdSet(names, ask, signal), acquired);
}
