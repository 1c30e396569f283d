// Per-connection and per-namespace caps on waiting calls and Hold streams, enforced by one server
// interceptor at the transport boundary: no handler counts anything. A call over a cap is answered
// RESOURCE_EXHAUSTED naming the cap before its handler runs; every other call goes on as before.
// The caps on message size, concurrent streams and pings are grpc-js and HTTP/2 settings
// (serverOptionsFor, ping-policy.ts); the cap on waiters per lock is kept in Redis (acquire-4).
import type { Http2Session } from 'node:http2';
import { Metadata, ServerInterceptingCall, status, type ServerInterceptingCallInterface, type ServerInterceptor, type ServerOptions } from '@grpc/grpc-js';
import { sessionOf } from './call-context';
import type { LimitName } from '../config/limit-names';

export interface ServerLimits {
  /** grpc.max_receive_message_length: larger requests are RESOURCE_EXHAUSTED before decoding. */
  maxMessageBytes: number;
  /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: calls open at once on one connection. */
  maxConcurrentStreams: number;
  /** Waiting calls (Acquire with wait_timeout_ms > 0 until answered, Hold until granted) per connection. */
  maxWaitersPerConnection: number;
  /** Open Hold streams (waiting or holding) per connection. */
  maxHoldsPerConnection: number;
  /** The same, per namespace, on this server process. */
  maxWaitersPerNamespace: number;
  maxHoldsPerNamespace: number;
  /** Queued waiters per lock across all servers (acquire-4 checks it); 0: no cap. */
  maxWaitersPerLock: number;
  /** Operations in flight on one Session stream: at the cap the server reads no more until some are answered. */
  maxSessionOps: number;
  /** Waiting operations (acquire or hold with wait_timeout_ms > 0) in flight on one Session; over it: RESOURCE_EXHAUSTED. */
  maxSessionWaiters: number;
  /** Locks held with `hold` on one Session; over it: RESOURCE_EXHAUSTED. */
  maxSessionLocks: number;
  /** Pings closer together than this, with nothing sent in between, are strikes (ping-policy.ts). */
  minPingIntervalMs: number;
  /** Strikes allowed before the connection is closed with GOAWAY ENHANCE_YOUR_CALM. */
  maxPingStrikes: number;
}

/**
 * Production defaults, from the README's "Resources and limits" figures (about 13 KiB of server
 * RSS per waiter or Hold stream; a 1 000-waiter queue refresh is one ~6 ms script).
 */
export const DEFAULT_LIMITS: ServerLimits = {
  maxMessageBytes: 16 * 1024,
  maxConcurrentStreams: 1000,
  maxWaitersPerConnection: 500,
  maxHoldsPerConnection: 900,
  maxWaitersPerNamespace: 10_000,
  maxHoldsPerNamespace: 10_000,
  maxWaitersPerLock: 1000,
  // About 12 KiB of server RSS per waiting operation and 9-15 KiB per held lock (1.3 KiB of live heap), as per waiter or Hold stream
  // (docs/sessions.md): a full session is about 130 MB of each, like a full namespace. The ops cap
  // leaves room for 6 384 quick operations (cancels among them) beside a full set of waits.
  maxSessionOps: 16_384,
  maxSessionWaiters: 10_000,
  maxSessionLocks: 10_000,
  minPingIntervalMs: 5000,
  maxPingStrikes: 2,
};

/** The grpc-js server options that carry the limits grpc-js enforces itself. */
export function serverOptionsFor(limits: ServerLimits): ServerOptions {
  return {
    'grpc.max_receive_message_length': limits.maxMessageBytes,
    'grpc.max_concurrent_streams': limits.maxConcurrentStreams,
  };
}

const refused = (limit: LimitName, details: string) => ({ limit, details });

/** Gives the namespace a call belongs to, from its metadata (auth decides); '' is the default namespace. */
export type NamespaceOf = (metadata: Metadata) => string;

interface Counts {
  waiters: number;
  holds: number;
}

/** What the server knows of one connection: its counts, and whether it sent anything since the client's last ping. */
export interface ConnectionState extends Counts {
  sentSincePing: boolean;
}

/** Calls that may wait for locks, and those that then hold them as a stream (a set counts once). */
const ACQUIRE_PATHS = new Set(['/holdfast.v1.LockService/Acquire', '/holdfast.v1.LockService/AcquireSet']);
const HOLD_PATHS = new Set(['/holdfast.v1.LockService/Hold', '/holdfast.v1.LockService/HoldSet']);
/** A Session counts as one Hold stream, however many locks it holds (it has caps of its own: transport/session.ts). */
const SESSION_PATH = '/holdfast.v1.LockService/Session';

export class CallLimits {
  private readonly connections = new WeakMap<Http2Session, ConnectionState>();
  private readonly namespaces = new Map<string, Counts>();

  constructor(
    private readonly limits: ServerLimits,
    private readonly namespaceOf: NamespaceOf = () => '',
    /** Told of each refusal, by the limit's flag name (metrics). */
    private readonly onRefused?: (limit: LimitName) => void,
  ) {}

  /** The state of a connection, made on first use. */
  connection(session: Http2Session): ConnectionState {
    let state = this.connections.get(session);
    if (!state) this.connections.set(session, (state = { waiters: 0, holds: 0, sentSincePing: false }));
    return state;
  }

  readonly interceptor: ServerInterceptor = (method, call: ServerInterceptingCallInterface) => {
    const session = sessionOf(call);
    const connection = session ? this.connection(session) : { waiters: 0, holds: 0, sentSincePing: false };
    const isSession = method.path === SESSION_PATH;
    const isHold = isSession || HOLD_PATHS.has(method.path);
    if (!isHold && !ACQUIRE_PATHS.has(method.path)) {
      // Still noted for the ping policy: a response is data sent on the connection.
      return new ServerInterceptingCall(call, {
        sendMetadata: (metadata, next) => {
          connection.sentSincePing = true;
          next(metadata);
        },
        sendMessage: (message, next) => {
          connection.sentSincePing = true;
          next(message);
        },
      });
    }
    let namespace = '';
    let metadata: Metadata | undefined;
    let admitted = false;
    let waiting = false;
    let refused = false;
    const stopWaiting = () => {
      if (!waiting) return;
      waiting = false;
      connection.waiters--;
      this.namespaceCounts(namespace).waiters--;
    };
    const end = () => {
      if (!admitted) return;
      admitted = false;
      stopWaiting();
      if (isHold) {
        connection.holds--;
        this.namespaceCounts(namespace).holds--;
      }
      this.dropIfIdle(namespace);
    };
    const intercepting: ServerInterceptingCall = new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (received, nextMetadata) => {
            metadata = received;
            nextMetadata(received);
          },
          onReceiveMessage: (message, nextMessage) => {
            if (refused) return;
            if (admitted && isSession) return void nextMessage(message); // a session is admitted once, at its first operation
            // Asked now, not with the metadata: every interceptor has seen the metadata by the time a message arrives.
            namespace = metadata ? this.namespaceOf(metadata) : '';
            const waits = (isHold && !isSession) || Number((message as { waitTimeoutMs?: unknown })?.waitTimeoutMs ?? 0) > 0;
            const refusal = this.refusal(connection, namespace, isHold, waits);
            if (refusal) {
              refused = true;
              this.onRefused?.(refusal.limit);
              intercepting.sendStatus({ code: status.RESOURCE_EXHAUSTED, details: refusal.details, metadata: new Metadata() });
              return;
            }
            this.admit(connection, namespace, isHold, waits);
            admitted = true;
            waiting = waits;
            nextMessage(message);
          },
          onReceiveHalfClose: (nextHalfClose) => {
            if (!refused) nextHalfClose();
          },
          onCancel: end,
        }),
      sendMetadata: (metadata, next) => {
        connection.sentSincePing = true;
        next(metadata);
      },
      sendMessage: (message, next) => {
        connection.sentSincePing = true;
        stopWaiting(); // a Hold's first message says it was granted
        next(message);
      },
      sendStatus: (statusObject, next) => {
        end();
        next(statusObject);
      },
    });
    return intercepting;
  };

  /** Why this call may not start, naming the limit, or undefined. */
  private refusal(connection: Counts, namespace: string, isHold: boolean, waits: boolean): { limit: LimitName; details: string } | undefined {
    const ns = this.namespaces.get(namespace) ?? { waiters: 0, holds: 0 };
    const { limits } = this;
    const where = namespace === '' ? 'the default namespace' : `namespace "${namespace}"`;
    if (isHold && connection.holds >= limits.maxHoldsPerConnection) {
      return refused(
        'max-holds-per-connection',
        `this connection has ${connection.holds} Hold streams open, the most max-holds-per-connection allows; open another connection or end some`,
      );
    }
    if (waits && connection.waiters >= limits.maxWaitersPerConnection) {
      return refused(
        'max-waiters-per-connection',
        `this connection has ${connection.waiters} calls waiting for locks, the most max-waiters-per-connection allows; open another connection or wait for fewer locks at once`,
      );
    }
    if (isHold && ns.holds >= limits.maxHoldsPerNamespace) {
      return refused('max-holds-per-namespace', `${where} has ${ns.holds} Hold streams open on this server, the most max-holds-per-namespace allows`);
    }
    if (waits && ns.waiters >= limits.maxWaitersPerNamespace) {
      return refused(
        'max-waiters-per-namespace',
        `${where} has ${ns.waiters} calls waiting for locks on this server, the most max-waiters-per-namespace allows`,
      );
    }
    return undefined;
  }

  /**
   * One waiter or hold slot of a namespace, for a Session's waiting operation or held lock: they
   * count as waiting calls and Hold streams do. Why not (naming the cap), or undefined once counted.
   */
  takeNamespaceSlot(namespace: string, kind: keyof Counts): string | undefined {
    const counts = this.namespaceCounts(namespace);
    const holds = kind === 'holds';
    const cap = holds ? this.limits.maxHoldsPerNamespace : this.limits.maxWaitersPerNamespace;
    if (counts[kind] < cap) {
      counts[kind]++;
      return undefined;
    }
    this.dropIfIdle(namespace);
    const limit: LimitName = holds ? 'max-holds-per-namespace' : 'max-waiters-per-namespace';
    this.onRefused?.(limit);
    const where = namespace === '' ? 'the default namespace' : `namespace "${namespace}"`;
    const what = holds ? 'locks held by Hold streams and sessions' : 'calls and session operations waiting for locks';
    return `${where} has ${counts[kind]} ${what} on this server, the most ${limit} allows`;
  }

  giveNamespaceSlot(namespace: string, kind: keyof Counts): void {
    const counts = this.namespaces.get(namespace);
    if (!counts) return;
    counts[kind]--;
    this.dropIfIdle(namespace);
  }

  private admit(connection: Counts, namespace: string, isHold: boolean, waits: boolean): void {
    const ns = this.namespaceCounts(namespace);
    if (isHold) {
      connection.holds++;
      ns.holds++;
    }
    if (waits) {
      connection.waiters++;
      ns.waiters++;
    }
  }

  private namespaceCounts(namespace: string): Counts {
    let counts = this.namespaces.get(namespace);
    if (!counts) this.namespaces.set(namespace, (counts = { waiters: 0, holds: 0 }));
    return counts;
  }

  private dropIfIdle(namespace: string): void {
    const counts = this.namespaces.get(namespace);
    if (counts && counts.waiters === 0 && counts.holds === 0) this.namespaces.delete(namespace);
  }
}
