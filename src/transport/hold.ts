// Hold: the open stream is the lease. Acquire (waiting like Acquire), send `acquired`, let the
// engine's watchdog renew and report, and release the moment the stream ends.
import { status, type ServerWritableStream } from '@grpc/grpc-js';
import { LostReason, type HoldRequest, type HoldResponse } from '../../clients/ts/gen/holdfast/v1/lock';
import type { LockEngine } from '../engine/engine';
import { LockError } from '../engine/errors';
import type { LostReason as EngineLostReason } from '../engine/watchdog';
import { boundedWait, callScope } from './call-context';
import { MAX_TTL_MS, checkMillis, toAcquireParams } from './requests';
import { serviceError, toServiceError } from './status';

export interface HoldOptions {
  defaultTtlMs: number;
  deadlineMarginMs: number;
  /** Server cap on any hold, 0 for none. */
  maxHoldMs: number;
  /** How long a lock stays closed after its Hold stream ended without an explicit Release. */
  lockDelayMs: number;
  logError(err: unknown): void;
}

const LOST_CODE: Record<EngineLostReason, LostReason> = {
  expired: LostReason.LOST_REASON_EXPIRED,
  taken: LostReason.LOST_REASON_TAKEN,
  backend_unavailable: LostReason.LOST_REASON_BACKEND_UNAVAILABLE,
  server_shutdown: LostReason.LOST_REASON_SERVER_SHUTDOWN,
  max_hold: LostReason.LOST_REASON_MAX_HOLD,
  released: LostReason.LOST_REASON_RELEASED,
};

type HoldCall = ServerWritableStream<HoldRequest, HoldResponse>;

export function holdHandler(engine: LockEngine, options: HoldOptions) {
  return (call: HoldCall) => {
    hold(engine, options, call).catch((err) => call.emit('error', toServiceError(err, options.logError)));
  };
}

/** The smaller of the request's cap and the server's; 0 is no cap. */
function maxHoldOf(requested: number, server: number): number {
  if (requested === 0) return server;
  return server === 0 ? requested : Math.min(requested, server);
}

async function hold(engine: LockEngine, options: HoldOptions, call: HoldCall): Promise<void> {
  const params = toAcquireParams(call.request, options.defaultTtlMs);
  const maxHoldMs = maxHoldOf(
    checkMillis('max_hold_ms', call.request.maxHoldMs, 1, MAX_TTL_MS * 365, 'the server cap'),
    options.maxHoldMs,
  );
  const requestedWait = params.waitMs;
  params.waitMs = boundedWait(call, params.waitMs, options.deadlineMarginMs);
  const { signal, finish } = callScope(call);
  const grant = await engine.acquire(params, signal);
  if (signal.aborted) return; // the engine gave back any grant that raced the cancellation
  if (!grant) {
    finish();
    throw new LockError('timeout', `lock "${params.name}" was not acquired within ${requestedWait} ms`);
  }

  call.write({ acquired: { token: grant.token, fencingToken: grant.fencingToken, ttlMs: String(grant.ttlMs), holdCount: grant.holdCount } });
  const lease = engine.keep(
    { name: params.name, token: grant.token, ttlMs: grant.ttlMs, maxHoldMs },
    {
      onRenewed: (ttlMs) => call.write({ renewed: { ttlMs: String(ttlMs) } }),
      onLost: (reason, message) => {
        finish(); // the lease is over: closing the stream must not release anything again
        if (reason === 'released') {
          call.end(); // the client released it on purpose: a normal end
          return;
        }
        call.write({ lost: { reason: message, code: LOST_CODE[reason] } });
        const code = reason === 'server_shutdown' ? status.UNAVAILABLE : status.ABORTED;
        call.emit('error', serviceError(code, `lock "${params.name}": ${message}`));
      },
    },
    grant.leaseStart,
  );
  // The client cancelled, or its connection dropped (or keepalive found it dead): release now,
  // keeping the lock closed for the lock-delay since the holder did not release it itself.
  signal.addEventListener('abort', () => {
    lease.stop();
    engine.release(params.name, grant.token, options.lockDelayMs).catch(() => {});
  });
}
