// Sends request bytes exactly as written, on a connection of its own, and reports how the call
// ended: its status, the Hold events before it, and whether the client cancelled it or gave it a
// deadline. Also what one connection can afford in cancels (see ResetBudget).
import { Client, credentials, Metadata, status, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { HoldResponse } from '../../gen/holdfast/v1/lock';
import { PATHS } from './bodies';
import type { End, Method } from './plans';

const identity = (b: Buffer) => b;

/**
 * The server's HTTP/2 stack (nghttp2 in Node 20) drops a connection that resets more than 1 000
 * streams in a burst, then 33 a second (test/e2e/mass-cancel.test.ts). Every cancel, and every
 * deadline that fires first on the client, is one RST_STREAM. The fuzzer keeps each connection
 * inside that limit, with a margin, by asking this bucket before it plans a cancel or a deadline.
 */
export class ResetBudget {
  private tokens: number;
  private at = performance.now();

  constructor(
    private readonly burst = 800,
    private readonly perSecond = 25,
  ) {
    this.tokens = burst;
  }

  take(): boolean {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export interface Connection {
  label: string;
  client: Client;
  budget: ResetBudget;
}

/** A client on a connection of its own: grpc-js otherwise shares one connection per address. */
export function openConnection(addr: string, label: string): Connection {
  const client = new Client(addr, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1, 'grpc.primary_user_agent': label });
  return { label, client, budget: new ResetBudget() };
}

export interface Outcome {
  code: number;
  details: string;
  /** The client cancelled the call (it may have ended otherwise first). */
  cancelled: boolean;
  /** The call had a deadline the plan chose (not only the hang detector's). */
  deadline: boolean;
  /** Unary: the response bytes, on OK. */
  response?: Buffer;
  /** Hold: the events received, decoded. */
  events: HoldResponse[];
  ms: number;
}

/** How the fuzzer sends a call and records it (run.ts); `connectionCut`: the test cuts its connection. */
export type Send = (
  conn: Connection,
  method: Method,
  family: string,
  body: Buffer,
  end: End,
  onAcquired?: (event: HoldResponse) => void,
  connectionCut?: boolean,
) => Promise<Outcome>;

/** A call still open this long has hung: every plan ends by itself well before. */
const HANG_MS = 25_000;
/**
 * Requests larger than this are slow to deliver: the server's HTTP/2 receive window is 64 KiB
 * (grpc-js sets no other), so each 64 KiB waits for the server's event loop to take it, and under
 * the fuzzer's load a 1-2 MiB request took 6-25 s while small ones took about 1 s. They get longer.
 */
export const LARGE_BYTES = 256 * 1024;
const LARGE_HANG_MS = 60_000;

export interface CallHooks {
  /** Hold: the stream said `acquired`. */
  onAcquired?(event: HoldResponse): void;
}

/** Sends `body` to `method` and ends the call as `end` says; resolves once the call has ended. */
export function call(conn: Connection, method: Method, body: Buffer, end: End, hooks: CallHooks = {}): Promise<Outcome> {
  const started = performance.now();
  const deadline = end.t === 'deadline';
  const options = { deadline: Date.now() + (deadline ? end.ms : body.length > LARGE_BYTES ? LARGE_HANG_MS : HANG_MS) };
  const outcome: Outcome = { code: -1, details: '', cancelled: false, deadline, events: [], ms: 0 };
  return new Promise<Outcome>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const finish = (code: number, details: string, response?: Buffer) => {
      if (outcome.code !== -1) return;
      clearTimeout(timer);
      Object.assign(outcome, { code, details, response, ms: Math.round(performance.now() - started) });
      resolve(outcome);
    };
    if (method !== 'hold') {
      const unary = conn.client.makeUnaryRequest(
        PATHS[method],
        identity,
        identity,
        body,
        new Metadata(),
        options,
        (err: ServiceError | null, response?: Buffer) => (err ? finish(err.code, err.details) : finish(status.OK, '', response)),
      );
      if (end.t === 'cancel') timer = setTimeout(() => ((outcome.cancelled = true), unary.cancel()), end.afterMs);
      return;
    }
    const stream: ClientReadableStream<Buffer> = conn.client.makeServerStreamRequest(PATHS.hold, identity, identity, body, new Metadata(), options);
    stream.on('data', (bytes: Buffer) => {
      const event = HoldResponse.decode(bytes);
      outcome.events.push(event);
      if (event.acquired) hooks.onAcquired?.(event);
    });
    stream.on('error', (err: ServiceError) => finish(err.code, err.details));
    stream.on('status', (s) => finish(s.code, s.details));
    if (end.t === 'cancel') timer = setTimeout(() => ((outcome.cancelled = true), stream.cancel()), end.afterMs);
  });
}
