// holdfast.v1.AdminService: this server's own counts, so that an operator or a test can see them
// return to zero. The engine counts its waiters, subscriptions, leases and timers; the calls in
// flight are counted here, by one server interceptor, since only the transport sees every call.
import { ServerInterceptingCall, type ServerInterceptingCallInterface, type ServerInterceptor } from '@grpc/grpc-js';
import type { AdminServiceServer } from '../../gen/holdfast/v1/admin';
import type { LockBackend } from '../engine/backend';
import type { FenceRing } from '../fencing/ring';

const ADMIN_PATHS = '/holdfast.v1.AdminService/';
const HOLD_PATH = '/holdfast.v1.LockService/Hold';

/**
 * Counts calls from their start until grpc-js reports their end: it does for every call, once,
 * after the status went out or when the stream closed without one (a cancel, a lost connection).
 * AdminService calls are left out, so that asking does not change the answer.
 */
export class CallCounter {
  inFlight = 0;
  holdStreams = 0;

  readonly interceptor: ServerInterceptor = (method, call: ServerInterceptingCallInterface) => {
    if (method.path.startsWith(ADMIN_PATHS)) return new ServerInterceptingCall(call);
    const hold = method.path === HOLD_PATH;
    let open = true;
    this.inFlight++;
    if (hold) this.holdStreams++;
    const onEnd = () => {
      if (!open) return;
      open = false;
      this.inFlight--;
      if (hold) this.holdStreams--;
    };
    return new ServerInterceptingCall(call, { start: (next) => next({ onCancel: onEnd }) });
  };
}

export function adminService(engine: Pick<LockBackend, 'stats'>, calls: CallCounter, fenceKeys?: FenceRing): AdminServiceServer {
  return {
    getServerStats: (_call, callback) => {
      const stats = engine.stats();
      callback(null, {
        waiters: stats.waiters,
        waitLines: stats.lines,
        subscriptions: stats.subscriptions,
        waitLineTimers: stats.lineTimers,
        claimsInFlight: stats.claimsInFlight,
        keptLeases: stats.keptLeases,
        namedHolds: stats.namedHolds,
        watchdogTimerArmed: stats.timerArmed,
        holdStreams: calls.holdStreams,
        callsInFlight: calls.inFlight,
      });
    },
    // The public keys guards verify fences with (as GET /fence-keys); none without --fence-signing-key.
    getFenceKeys: (_call, callback) => callback(null, fenceKeys?.adminResponse() ?? { signingKeyId: '', keys: [] }),
  };
}
