// Hold: the open stream is the lease. Acquire (waiting like Acquire), send `acquired`, let the
// engine's watchdog renew and report. A cancel by the client gives the hold back at once, and so
// does the call's deadline (the client's own word, on its own clock); any other end leaves the
// lease to run out, since the client may not know its stream is over.
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { ServerSurfaceCall } from '@grpc/grpc-js/build/src/server-call';
import { LostReason, type HoldRequest, type HoldResponse } from '../../gen/holdfast/v1/lock';
import type { LockBackend } from '../engine/backend';
import { newHoldId } from '../engine/engine';
import { LockError } from '../engine/errors';
import type { AcquireParams, LostReason as EngineLostReason } from '../engine/types';
import { boundedWait, callScope } from './call-context';
import { checkMaxHold, toAcquireParams } from './requests';
import { fenceOf, grantFields } from './responses';
import type { SignFence } from '../fencing/fence';
import { driftMarginMs } from '../../clients/ts/deadline';
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

export function holdHandler(engine: LockBackend, options: HoldOptions) {
  return (call: HoldCall) => {
    hold(engine, options, call).catch((err) => call.emit('error', toServiceError(err, options.logError)));
  };
}

/**
 * What a Hold (or HoldSet) asks the engine for: the request's parameters, waiting no longer
 * than the call's deadline allows, and with no lease outliving the hold's cap (so the lock is
 * free when max_hold_ms ends it). A new object: the checked request stays as it was.
 */
export function holdParams<P extends Omit<AcquireParams, 'name' | 'holdId'>>(asked: P, waitMs: number, maxHoldMs: number): P {
  return { ...asked, waitMs, ttlMs: maxHoldMs > 0 ? Math.min(asked.ttlMs, maxHoldMs) : asked.ttlMs };
}

/** The smaller of the request's cap and the server's; 0 is no cap. */
export function maxHoldOf(requested: number, server: number): number {
  if (requested === 0) return server;
  return server === 0 ? requested : Math.min(requested, server);
}

async function hold(engine: LockBackend, options: HoldOptions, call: HoldCall): Promise<void> {
  // Every time sent to the client counts from here: it anchors them at when it sent the request.
  const receivedAt = performance.now();
  const sinceRequest = (at: number) => String(Math.max(0, Math.floor(at - receivedAt)));
  const asked = toAcquireParams(call.request, options.defaultTtlMs);
  const maxHoldMs = maxHoldOf(checkMaxHold(call.request.maxHoldMs), options.maxHoldMs);
  const params = { ...holdParams(asked, boundedWait(call, asked.waitMs, options.deadlineMarginMs), maxHoldMs), holdId: newHoldId() };
  const { signal, cancelledByClient, finish } = callScope(call);
  const grant = await engine.acquire(params, signal);
  if (signal.aborted) return; // the engine gave back any grant that raced the cancellation
  if (!grant) {
    finish();
    throw new LockError('timeout', `lock "${params.name}" was not acquired within ${asked.waitMs} ms`);
  }

  call.write({
    acquired: {
      ...grantFields(grant, fenceOf(options.signFence, params.name, grant.fencingToken, grant)),
      leaseStartedAfterMs: sinceRequest(grant.leaseStart),
      holdId: params.holdId,
    },
  });
  const lease = engine.keep(
    {
      name: params.name,
      token: grant.token,
      holdId: params.holdId,
      ttlMs: params.ttlMs,
      maxHoldMs,
      lockDelayMs: options.lockDelayMs,
      releaseOnDisconnect: options.releaseOnDisconnect || call.request.releaseOnDisconnect,
    },
    {
      onRenewed: (ttlMs, leaseStart) => {
        const fence = fenceOf(options.signFence, params.name, grant.fencingToken, { leaseStart, ttlMs });
        call.write({ renewed: { ttlMs: String(ttlMs), leaseStartedAfterMs: sinceRequest(leaseStart), signedFences: fence ? [fence] : [] } });
      },
      onLost: (reason, message) => {
        finish(); // the lease is over: closing the stream must not give anything back again
        if (reason === 'released') {
          call.end(); // the client released it on purpose: a normal end
          return;
        }
        options.onAbnormalEnd?.({ name: params.name, holdId: params.holdId, reason, message });
        call.write({ lost: { reason: message, code: LOST_CODE[reason], name: '' } });
        call.emit('error', lostLeaseError(reason, `lock "${params.name}": ${message}`));
      },
    },
    grant.leaseStart,
    grant.ttlMs,
  );
  // A client that cancelled knows its lease is over: give the hold back now. A lost connection
  // (or keepalive finding the peer dead) says nothing about what the client believes: its
  // lease runs out first.
  signal.addEventListener('abort', () => {
    if (cancelledByClient()) return void lease.letGo();
    const givenBack = deadlineEndWait(call, receivedAt);
    if (givenBack !== undefined) return void setTimeout(() => void lease.letGo(), givenBack);
    const message = 'the stream ended without a cancel (the connection was lost)';
    options.onAbnormalEnd?.({ name: params.name, holdId: params.holdId, reason: 'stream_lost', message });
    void lease.abandon();
  });
}

/**
 * When the call ended at its deadline: how long to wait before giving the hold back, else
 * undefined. The client set the deadline and ends the call on its own clock, counted from when it
 * sent the request, which is before the server received it: so the server's deadline passes after
 * the client's, but for the two clocks' rates. The wait covers that drift, both ways, by the SDKs'
 * own allowance (clients/ts/deadline.ts), so the hold goes only once the client has stopped
 * counting on it.
 */
export function deadlineEndWait(call: ServerSurfaceCall, receivedAt: number): number | undefined {
  const deadline = call.getDeadline();
  const at = deadline instanceof Date ? deadline.getTime() : Number(deadline);
  if (!Number.isFinite(at) || Date.now() < at) return undefined;
  const callMs = at - (Date.now() - (performance.now() - receivedAt));
  return 2 * driftMarginMs(Math.max(0, callMs));
}
