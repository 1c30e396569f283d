// What a handler needs from a grpc-js call: an AbortSignal that fires when the client goes away,
// whether it went away on purpose, and how long it may wait so the answer still reaches the
// client before its deadline.
import { constants, type Http2Session, type Http2Stream } from 'node:http2';
import type { ServerSurfaceCall } from '@grpc/grpc-js/build/src/server-call';

/** One shared reason: abort() without one would build a DOMException for every call. */
const CLIENT_GONE = Object.freeze(new Error('the client cancelled the call or went away'));

export interface CallScope {
  /** Aborts when the client cancels or its connection drops before the call is finished. */
  signal: AbortSignal;
  /**
   * Once `signal` has aborted: true when the client itself cancelled the call (an HTTP/2
   * RST_STREAM with CANCEL on a connection that is still up), false when the connection was
   * lost (closed, reset, keepalive timeout) or the end cannot be told apart. A client that
   * cancelled knows its call is over; one whose connection was lost may not.
   */
  cancelledByClient(): boolean;
  /** The answer has been sent: a later 'cancelled' is no news (grpc-js emits it on every close). */
  finish(): void;
}

export function callScope(call: ServerSurfaceCall): CallScope {
  const controller = new AbortController();
  const stream = http2StreamOf(call);
  // Captured now: grpc-js detaches the stream from its session by the time it reports the end.
  const session = stream?.session;
  let byClient = false;
  const onCancelled = () => {
    byClient = stream?.rstCode === constants.NGHTTP2_CANCEL && isUp(session);
    controller.abort(CLIENT_GONE);
  };
  if (call.cancelled) onCancelled();
  else call.once('cancelled', onCancelled);
  return {
    signal: controller.signal,
    cancelledByClient: () => byClient,
    finish: () => call.removeListener('cancelled', onCancelled),
  };
}

/**
 * Whether the client at the other end of the call's connection is still there: it answers an
 * HTTP/2 PING. An end of the request stream reads the same whether the client sent it or its
 * connection reached EOF (a killed process); only a live client answers. False at once when the
 * stream cannot be found (the safe side), later when the connection dies first.
 */
export function peerAnswers(call: ServerSurfaceCall): Promise<boolean> {
  const session = http2StreamOf(call)?.session;
  if (!session || !isUp(session)) return Promise.resolve(false);
  return new Promise((resolve) => {
    const sent = session.ping((err) => resolve(!err && isUp(session) && !call.cancelled));
    if (!sent) resolve(false);
  });
}

function isUp(session: Http2Session | undefined): boolean {
  return session !== undefined && !session.destroyed && !session.closed;
}

/**
 * The HTTP/2 stream under a grpc-js server call. grpc-js keeps it private: the base call holds
 * it as `stream`, and each server interceptor wraps the call below it as `nextCall`. When this
 * changes in grpc-js, nothing is found and every end counts as a lost connection (the safe side);
 * test/e2e/hold-ends.test.ts then fails on "a cancel frees the lock at once".
 */
function http2StreamOf(call: ServerSurfaceCall): Http2Stream | undefined {
  return streamBelow((call as unknown as { call?: unknown }).call);
}

/** The HTTP/2 session (connection) a server interceptor's call arrived on, found as http2StreamOf does. */
export function sessionOf(interceptingCall: unknown): Http2Session | undefined {
  return streamBelow(interceptingCall)?.session;
}

function streamBelow(call: unknown): Http2Stream | undefined {
  let inner = call as { stream?: Http2Stream; nextCall?: unknown } | undefined;
  for (let depth = 0; inner && depth < 16; depth++) {
    if (inner.stream) return inner.stream;
    inner = inner.nextCall as typeof inner;
  }
  return undefined;
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
