// What a handler needs from a grpc-js call: an AbortSignal that fires when the client goes away,
// and how long it may wait so the answer still reaches the client before its deadline.
import type { ServerSurfaceCall } from '@grpc/grpc-js/build/src/server-call';

export function callSignal(call: ServerSurfaceCall): AbortSignal {
  const controller = new AbortController();
  if (call.cancelled) controller.abort();
  else call.once('cancelled', () => controller.abort());
  return controller.signal;
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
