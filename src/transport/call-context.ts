// What a handler needs from a grpc-js call: an AbortSignal that fires when the client goes away,
// and how long it may wait so the answer still reaches the client before its deadline.
import type { ServerSurfaceCall } from '@grpc/grpc-js/build/src/server-call';

/** One shared reason: abort() without one would build a DOMException for every call. */
const CLIENT_GONE = Object.freeze(new Error('the client cancelled the call or went away'));

export interface CallScope {
  /** Aborts when the client cancels or its connection drops before the call is finished. */
  signal: AbortSignal;
  /** The answer has been sent: a later 'cancelled' is no news (grpc-js emits it on every close). */
  finish(): void;
}

export function callScope(call: ServerSurfaceCall): CallScope {
  const controller = new AbortController();
  const onCancelled = () => controller.abort(CLIENT_GONE);
  if (call.cancelled) onCancelled();
  else call.once('cancelled', onCancelled);
  return { signal: controller.signal, finish: () => call.removeListener('cancelled', onCancelled) };
}

/**
 * The wait allowed by both wait_timeout_ms and the call's deadline, less a margin in which the
 * answer travels back: a grant made after the client stopped listening would be orphaned.
 */
export function boundedWait(call: ServerSurfaceCall, waitMs: number, marginMs: number): number {
  const deadline = call.getDeadline();
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  if (!Number.isFinite(at)) return waitMs;
  return Math.max(0, Math.min(waitMs, at - Date.now() - marginMs));
}
