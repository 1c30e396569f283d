// Watch: one lock's state, then its changes, pushed as they happen. The engine's watch room reads
// the lock once per change for all watchers on this server; this stream only writes. A watcher
// whose connection cannot keep up is sent nothing more until it drains, then only the latest state.
import type { ServerWritableStream } from '@grpc/grpc-js';
import { LostReason, WatchEvent, type WatchRequest, type WatchResponse } from '../../gen/holdfast/v1/lock';
import type { LockBackend } from '../engine/backend';
import type { VanishReason } from '../engine/types';
import type { WatchEventKind, WatchUpdate } from '../engine/watch-room';
import { callScope } from './call-context';
import { checkName } from './requests';
import { holderFields } from './responses';
import { toServiceError } from './status';

const EVENT: Record<WatchEventKind, WatchEvent> = {
  state: WatchEvent.WATCH_EVENT_STATE,
  granted: WatchEvent.WATCH_EVENT_GRANTED,
  released: WatchEvent.WATCH_EVENT_RELEASED,
  expired: WatchEvent.WATCH_EVENT_EXPIRED,
  lost: WatchEvent.WATCH_EVENT_LOST,
  value_changed: WatchEvent.WATCH_EVENT_VALUE_CHANGED,
  deadlock: WatchEvent.WATCH_EVENT_DEADLOCK,
};

const LOST: Record<VanishReason, LostReason> = {
  disconnected: LostReason.LOST_REASON_DISCONNECTED,
  max_hold: LostReason.LOST_REASON_MAX_HOLD,
  backend_unavailable: LostReason.LOST_REASON_BACKEND_UNAVAILABLE,
  server_shutdown: LostReason.LOST_REASON_SERVER_SHUTDOWN,
};

type WatchCall = ServerWritableStream<WatchRequest, WatchResponse>;

export function watchResponse(update: WatchUpdate): WatchResponse {
  const { state } = update;
  return {
    event: EVENT[update.event],
    holder: update.holder ? holderFields(update.holder) : undefined,
    lostReason: update.lostReason ? LOST[update.lostReason] : LostReason.LOST_REASON_UNSPECIFIED,
    name: state.name,
    holders: state.holders.map(holderFields),
    waiters: state.waiters,
    fencingToken: state.fencingToken,
    deadlock: update.deadlock ?? '',
  };
}

export function watchHandler(engine: LockBackend, logError: (err: unknown) => void) {
  return (call: WatchCall) => {
    let stop: () => void;
    let behind = false;
    let latest: WatchUpdate | null = null;
    const send = (update: WatchUpdate) => {
      if (behind) latest = update;
      else if (!call.write(watchResponse(update))) behind = true;
    };
    call.on('drain', () => {
      behind = false;
      const missed = latest;
      latest = null;
      if (missed) send({ event: 'state', state: missed.state });
    });
    try {
      stop = engine.watch(checkName(call.request.name), {
        onUpdate: send,
        onEnd: (error) => call.emit('error', toServiceError(error, logError)),
      });
    } catch (err) {
      call.emit('error', toServiceError(err, logError));
      return;
    }
    callScope(call).signal.addEventListener('abort', stop, { once: true });
  };
}
