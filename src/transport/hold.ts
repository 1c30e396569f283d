// Hold (and HoldSet, lock-set.ts): the open stream is the lease. Decode the request, let the
// engine's lease group take and keep the lock (src/engine/lease-group.ts), and encode what it
// reports: `acquired`, each `renewed`, the `lost` that ends the stream. When the stream ends, the
// group applies the end rule: a cancel by the client gives the hold back at once, the call's
// deadline after the clocks' drift wait (the client's own word, on its own clock); any other end
// leaves the lease to run out, since the client may not know its stream is over.
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { ServerSurfaceCall } from '@grpc/grpc-js/build/src/server-call';
import { LostReason, type HoldRequest, type HoldResponse, type HoldSetRequest, type HoldSetResponse } from '../../gen/holdfast/v1/lock';
import type { LockBackend } from '../engine/backend';
import type { HeldSet, HoldAsk, LeaseGroup, LeaseSet } from '../engine/lease-group';
import type { LostReason as EngineLostReason } from '../engine/types';
import { boundedWait, callScope, type CallScope } from './call-context';
import { msSince } from './operations';
import { checkMaxHold, toAcquireParams, toSetParams } from './requests';
import { fenceOf, grantFields } from './responses';
import type { SignFence } from '../fencing/fence';
import { lostLeaseError, toServiceError } from './status';

export interface HoldOptions {
  defaultTtlMs: number;
  deadlineMarginMs: number;
  /** Server cap on any hold, 0 for none. */
  maxHoldMs: number;
  /** How long a lock stays closed after a vanished holder's lease has run out. */
  lockDelayMs: number;
  /** Free every Hold's lock the moment its stream ends, however it ends (gives up the lease guarantee). */
  releaseOnDisconnect: boolean;
  logError(err: unknown): void;
  /** Signs each grant's fence in this service's namespace; absent: no signing key, fence fields stay empty. */
  signFence?: SignFence;
  /** Told once for each granted Hold that ends other than by its holder's word, for the log. */
  onAbnormalEnd?(end: AbnormalHoldEnd): void;
}

/** A lost lease (the watchdog's reason), or 'stream_lost': the stream ended without a cancel. */
export interface AbnormalHoldEnd {
  name: string;
  holdId: string;
  reason: Exclude<EngineLostReason, 'released'> | 'stream_lost';
  message: string;
}

export const LOST_CODE: Record<EngineLostReason, LostReason> = {
  expired: LostReason.LOST_REASON_EXPIRED,
  taken: LostReason.LOST_REASON_TAKEN,
  backend_unavailable: LostReason.LOST_REASON_BACKEND_UNAVAILABLE,
  server_shutdown: LostReason.LOST_REASON_SERVER_SHUTDOWN,
  max_hold: LostReason.LOST_REASON_MAX_HOLD,
  released: LostReason.LOST_REASON_RELEASED,
  failover: LostReason.LOST_REASON_FAILOVER,
};

type HoldCall = ServerWritableStream<HoldRequest, HoldResponse>;
/** A Hold or a HoldSet stream: both tell `renewed` and `lost` alike. */
export type HoldStreamCall = HoldCall | ServerWritableStream<HoldSetRequest, HoldSetResponse>;

export function holdHandler(engine: LockBackend, options: HoldOptions) {
  return (call: HoldCall) => {
    hold(engine, options, call).catch((err) => call.emit('error', toServiceError(err, options.logError)));
  };
}

/** The smaller of the request's cap and the server's; 0 is no cap. */
export function maxHoldOf(requested: number, server: number): number {
  if (requested === 0) return server;
  return server === 0 ? requested : Math.min(requested, server);
}

/**
 * A HoldRequest, decoded for the lease group: waiting no longer than the call's deadline allows.
 * `tag` names the set it takes (a session: the hold's op_id).
 */
export function holdAsk(request: HoldRequest, options: HoldOptions, call: ServerSurfaceCall, tag = ''): { name: string; ask: HoldAsk } {
  const { name, holdId: _, ...asked } = toAcquireParams(request, options.defaultTtlMs);
  const releaseOnDisconnect = options.releaseOnDisconnect || request.releaseOnDisconnect;
  return { name, ask: askOf(asked, request.maxHoldMs, options, call, releaseOnDisconnect, tag) };
}

/** A HoldSetRequest, decoded as holdAsk() decodes a HoldRequest. */
export function holdSetAsk(request: HoldSetRequest, options: HoldOptions, call: ServerSurfaceCall, tag = ''): { names: string[]; ask: HoldAsk } {
  const { names, params } = toSetParams(request, options.defaultTtlMs);
  return { names, ask: askOf(params, request.maxHoldMs, options, call, options.releaseOnDisconnect, tag) };
}

function askOf(asked: HoldAsk['params'], maxHoldMs: string, options: HoldOptions, call: ServerSurfaceCall, releaseOnDisconnect: boolean, tag: string): HoldAsk {
  return {
    params: { ...asked, waitMs: boundedWait(call, asked.waitMs, options.deadlineMarginMs) },
    askedWaitMs: asked.waitMs,
    maxHoldMs: maxHoldOf(checkMaxHold(maxHoldMs), options.maxHoldMs),
    releaseOnDisconnect,
    tag,
  };
}

async function hold(engine: LockBackend, options: HoldOptions, call: HoldCall): Promise<void> {
  // Every time sent to the client counts from here: it anchors them at when it sent the request.
  const receivedAt = performance.now();
  const { name, ask } = holdAsk(call.request, options, call);
  const acquired = ({ grants: [{ grant, holdId }] }: HeldSet): HoldResponse => {
    const fields = grantFields(grant, fenceOf(options.signFence, name, grant.fencingToken, grant));
    return { acquired: { ...fields, leaseStartedAfterMs: msSince(receivedAt, grant.leaseStart), holdId } };
  };
  await keepStream(engine, options, call, receivedAt, (group, signal) => group.hold(name, ask, signal), acquired);
}

/**
 * A Hold or HoldSet stream once decoded: `take` has the group take the set, `acquired` tells it;
 * then the group's reports are written until the set is lost or the stream ends.
 */
export async function keepStream(
  engine: LockBackend,
  options: HoldOptions,
  call: HoldStreamCall,
  receivedAt: number,
  take: (group: LeaseGroup, signal: AbortSignal) => Promise<HeldSet | null>,
  acquired: (held: HeldSet) => HoldResponse | HoldSetResponse,
): Promise<void> {
  const scope = callScope(call);
  // Either kind: `renewed` and `lost` are the same messages in both, and `acquired` is the caller's.
  const stream = call as ServerWritableStream<unknown, HoldResponse & HoldSetResponse>;
  let kept: LeaseSet | undefined;
  const group = engine.group(
    {
      renewed: (end) => {
        const signedFences = renewalFences(options.signFence, kept);
        stream.write({ renewed: { ttlMs: String(end.ttlMs), leaseStartedAfterMs: msSince(receivedAt, end.leaseStart), signedFences } });
      },
      lost: (set, member, reason, message) => {
        scope.finish(); // the set is over: closing the stream must not give anything back again
        if (reason === 'released') return void call.end(); // the holder released it on purpose: a normal end
        options.onAbnormalEnd?.({ name: member.name, holdId: member.holdId, reason, message });
        stream.write({ lost: { reason: message, code: LOST_CODE[reason], name: set.named ? member.name : '' } });
        call.emit('error', lostLeaseError(reason, set.named ? `the set lost ${message}` : `lock "${member.name}": ${message}`));
      },
    },
    options,
  );
  let held: HeldSet | null;
  try {
    held = await take(group, scope.signal);
  } catch (err) {
    scope.finish();
    throw err;
  }
  if (!held) return; // the client left while it was taken: nothing is held
  kept = held.set;
  stream.write(acquired(held) as HoldResponse & HoldSetResponse);
  scope.signal.addEventListener('abort', () => endWithStream(group, scope, call, receivedAt, options, STREAM_LOST));
}

const STREAM_LOST = () => 'the stream ended without a cancel (the connection was lost)';

/** Each member's fence, re-signed with its own latest lease, in the set's (canonical) order; none without a signing key. */
function renewalFences(sign: SignFence | undefined, set: LeaseSet | undefined): string[] {
  if (!sign || !set) return [];
  return set.members.map((m) => fenceOf(sign, m.name, m.fencingToken, { leaseStart: m.start, ttlMs: m.leftMs }));
}

/**
 * The stream holding `group` ended: the group applies the end rule to what it holds. A stream
 * lost without a cancel is logged once (not once per lock: a session may hold thousands).
 */
export function endWithStream(
  group: LeaseGroup,
  scope: CallScope,
  call: ServerSurfaceCall,
  anchor: number,
  options: HoldOptions,
  lostMessage: (locks: number) => string,
): void {
  const { rule, members } = group.end({ byHolder: scope.cancelledByClient(), deadlineCallMs: deadlineCallMs(call, anchor) });
  const [first] = members;
  if (rule === 'kept' && first)
    options.onAbnormalEnd?.({ name: first.name, holdId: first.holdId, reason: 'stream_lost', message: lostMessage(members.length) });
}

/**
 * When the call ended at its deadline: how long after the client sent its request that deadline
 * came, else undefined. The client counts from when it sent the request, before the server
 * received it (`anchor`); the engine's end rule adds the clocks' drift to it.
 */
function deadlineCallMs(call: ServerSurfaceCall, anchor: number): number | undefined {
  const deadline = call.getDeadline();
  const at = deadline instanceof Date ? deadline.getTime() : Number(deadline);
  if (!Number.isFinite(at) || Date.now() < at) return undefined;
  return at - (Date.now() - (performance.now() - anchor));
}
