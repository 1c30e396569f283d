// One Session stream (docs/sessions.md) that carries this client's acquire, release, renew and
// hold: one message each way per operation instead of a unary call's HEADERS and trailers.
//
// The stream is opened on first use and again after it ends. When it ends with operations in
// flight, each of them rejects with an error naming the address and the cause (it may or may not
// have happened), and every lease held under it is lost at once: the server keeps a vanished
// session's holds only until the leases it reported run out, so none may be counted on past that.
// A session left with nothing in flight and nothing held is closed soon after (IDLE_CLOSE_MS).
import { Metadata, status, type ClientDuplexStream, type ServiceError, type StatusObject } from '@grpc/grpc-js';
// grpc-js's own status → error mapping, so an operation's error is exactly its unary call's.
import { callErrorFromStatus } from '@grpc/grpc-js/build/src/call';
import { CANNOT_REACH } from './connection-errors';
import type {
  AcquireRequest,
  AcquireResponse,
  HoldAcquired,
  HoldRequest,
  HoldResponse,
  LockServiceClient,
  ReleaseRequest,
  ReleaseResponse,
  RenewRequest,
  RenewResponse,
  SessionRequest,
  SessionResponse,
} from './gen/holdfast/v1/lock';

/** One operation: a SessionRequest with exactly one of these set. */
type Operation = Pick<SessionRequest, 'acquire' | 'release' | 'renew' | 'hold'>;

/** What a lease held under a session is told. */
export interface SessionHolder {
  onEvent(event: HoldResponse): void;
  onEnd(end: StatusObject, stream: string): void;
}

interface Pending {
  /** Called with the answer, synchronously, before any later message of the stream is read. */
  answer(response: SessionResponse, session: OpenSession): void;
  reject(err: Error): void;
  /** Stops its timer and its signal's listener. */
  settled(): void;
  /** Set once the caller was told the operation is over (cancelled or timed out). */
  abandoned?: boolean;
  /** The lock an acquire or hold asks for: given back if granted after it was abandoned. */
  lockName?: string;
}

interface HeldUnder {
  holdId: string;
  name: string;
  token: string;
  /** Unset while the Lease is being built. */
  holder?: SessionHolder;
}

/** One open stream: its operations in flight and the locks it holds. */
class OpenSession {
  readonly pending = new Map<string, Pending>();
  /** By the op_id of the hold that took each lock. */
  readonly holds = new Map<string, HeldUnder>();
  readonly holdOps = new Map<string, string>(); // hold_id → op_id
  ended = false;
  readonly end: Promise<void>;

  constructor(
    readonly call: ClientDuplexStream<SessionRequest, SessionResponse>,
    /** performance.now() just before the stream started: every lease_started_after_ms counts from it. */
    readonly openedAt: number,
  ) {
    this.end = new Promise((resolve) => call.on('status', () => resolve()));
  }

  send(request: Partial<SessionRequest> & { opId: string }): void {
    if (!this.ended) this.call.write(request as SessionRequest);
  }

  forget(opId: string): HeldUnder | undefined {
    const held = this.holds.get(opId);
    if (held) {
      this.holds.delete(opId);
      this.holdOps.delete(held.holdId);
    }
    return held;
  }
}

export interface RunOptions {
  /** Added to the call timeout, as a unary call's wait is. */
  extraMs?: number;
  /** Aborting sends `cancel` and rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Builds a lease for a hold the session granted; `release` gives that hold back. */
export type BuildLease<L> = (acquired: HoldAcquired, openedAt: number, giveBack: () => void) => L & SessionHolder;

/**
 * A session with no operation in flight and no lock held is closed after this long: an open stream
 * keeps the process alive, and a script that released everything must be able to exit.
 */
export const IDLE_CLOSE_MS = 250;

export class SessionConnection {
  private current?: OpenSession;
  private nextOpId = 1;
  private idleTimer?: NodeJS.Timeout;

  constructor(
    private readonly stub: LockServiceClient,
    private readonly address: string,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Acquire over the session. `sentAt` is the moment its lease_started_after_ms counts from: the
   * open of the session that answered, not when this operation was sent.
   */
  acquire(request: AcquireRequest, extraMs?: number): Promise<{ grant: AcquireResponse; sentAt: number }> {
    return this.start({ acquire: request }, { extraMs }, (response, session) => ({ grant: answerOf(response, 'acquire'), sentAt: session.openedAt }));
  }

  release = (request: ReleaseRequest, extraMs?: number): Promise<ReleaseResponse> => {
    // A hold of this session's given back: the server reports it `lost` (RELEASED) next, which
    // its lease, already released, need not hear.
    const session = this.current;
    const opId = request.holdId ? session?.holdOps.get(request.holdId) : undefined;
    if (opId !== undefined) session?.forget(opId);
    return this.run({ release: request }, 'release', { extraMs });
  };

  renew = (request: RenewRequest, extraMs?: number): Promise<RenewResponse> => this.run({ renew: request }, 'renew', { extraMs });

  /** Holds a lock under the session; rejects with the unary error (DEADLINE_EXCEEDED when not granted in time). */
  hold<L>(request: HoldRequest, build: BuildLease<L>, signal?: AbortSignal): Promise<L> {
    return this.start({ hold: request }, { extraMs: Number(request.waitTimeoutMs), signal }, (response, session, opId) => {
      const acquired = response.hold;
      if (!acquired) throw new Error(`the session answered hold "${request.name}" with no grant`);
      const held: HeldUnder = { holdId: acquired.holdId, name: request.name, token: acquired.token };
      session.holds.set(opId, held);
      session.holdOps.set(held.holdId, opId);
      // Registered before the lease is built: a grant that arrived too late is given back at once.
      const lease = build(acquired, session.openedAt, () => this.giveBack(session, opId));
      held.holder = lease;
      return lease;
    });
  }

  /** Ends the session cleanly (its holds are released) and resolves when the stream has ended. */
  async close(): Promise<void> {
    const session = this.current;
    if (!session) return;
    this.current = undefined;
    session.send({ opId: this.opId(), close: {} });
    session.call.end();
    await session.end;
  }

  private run<K extends keyof Operation>(op: Operation, key: K, options: RunOptions): Promise<NonNullable<SessionResponse[K]>> {
    return this.start(op, options, (response) => answerOf(response, key));
  }

  private start<T>(op: Operation, options: RunOptions, onAnswer: (response: SessionResponse, session: OpenSession, opId: string) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      options.signal?.throwIfAborted();
      const session = this.session();
      const opId = this.opId();
      const signal = options.signal;
      const onAbort = () => abandon(signal?.reason as Error);
      const timeoutMs = this.timeoutMs + (options.extraMs ?? 0);
      const pending: Pending = {
        answer: (response, s) => {
          if (response.error) return reject(opError(response.error.code, response.error.message));
          try {
            resolve(onAnswer(response, s, opId));
          } catch (err) {
            reject(err as Error);
          }
        },
        reject,
        lockName: op.acquire?.name ?? op.hold?.name,
        settled: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
        },
      };
      const abandon = (err: Error) => {
        if (pending.abandoned || !session.pending.has(opId)) return;
        pending.abandoned = true;
        pending.settled();
        session.send({ opId: this.opId(), cancel: opId });
        reject(err);
      };
      const timer = setTimeout(
        () => abandon(opError(status.DEADLINE_EXCEEDED, `Deadline exceeded after ${timeoutMs} ms waiting for the session's answer`)),
        timeoutMs,
      );
      timer.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
      session.pending.set(opId, pending);
      session.send({ opId, ...op });
    });
  }

  private opId(): string {
    return String(this.nextOpId++);
  }

  /** The open session, or a new one. */
  private session(): OpenSession {
    if (this.current && !this.current.ended) return this.current;
    const openedAt = performance.now();
    const session = new OpenSession(this.stub.session(new Metadata()), openedAt);
    session.call.on('data', (response: SessionResponse) => this.onMessage(session, response));
    session.call.on('error', () => {}); // its status follows and ends everything
    session.call.on('status', (end: StatusObject) => this.onEnd(session, end));
    this.current = session;
    return session;
  }

  private onMessage(session: OpenSession, response: SessionResponse): void {
    if (response.renewed) {
      const renewed = { ttlMs: response.renewed.ttlMs, leaseStartedAfterMs: response.renewed.leaseStartedAfterMs };
      for (const held of session.holds.values()) held.holder?.onEvent({ renewed });
      return;
    }
    if (response.lost) {
      session.forget(response.opId)?.holder?.onEvent({ lost: response.lost });
    } else {
      const pending = session.pending.get(response.opId);
      if (!pending) return;
      session.pending.delete(response.opId);
      pending.settled();
      if (pending.abandoned) this.giveBackUnwanted(session, response, pending.lockName);
      else pending.answer(response, session);
    }
    this.closeWhenIdle(session);
  }

  private closeWhenIdle(session: OpenSession): void {
    const idle = () => session === this.current && session.pending.size === 0 && session.holds.size === 0;
    if (!idle() || this.idleTimer) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (idle()) void this.close();
    }, IDLE_CLOSE_MS);
    this.idleTimer.unref();
  }

  /** An acquire or hold granted after its caller gave up on it (the answer crossed the cancel): nobody else will release it. */
  private giveBackUnwanted(session: OpenSession, response: SessionResponse, name: string | undefined): void {
    const grant = response.hold ?? (response.acquire?.acquired ? response.acquire : undefined);
    if (!grant || name === undefined) return;
    session.send({ opId: this.opId(), release: { name, token: grant.token, holdId: response.hold?.holdId ?? '' } });
  }

  /** Gives back a hold whose lease ended on this side (its deadline passed, or a grant came too late). */
  private giveBack(session: OpenSession, opId: string): void {
    const held = session.forget(opId);
    if (!held || session.ended) return;
    session.send({ opId: this.opId(), release: { name: held.name, token: held.token, holdId: held.holdId } });
    this.closeWhenIdle(session);
  }

  private onEnd(session: OpenSession, end: StatusObject): void {
    session.ended = true;
    if (this.current === session) this.current = undefined;
    const ended = sessionEnded(this.address, end);
    for (const pending of session.pending.values()) {
      pending.settled();
      if (!pending.abandoned) pending.reject(ended);
    }
    session.pending.clear();
    const holds = [...session.holds.values()];
    session.holds.clear();
    session.holdOps.clear();
    for (const held of holds) held.holder?.onEnd(end, 'the session');
  }
}

function answerOf<K extends keyof Operation>(response: SessionResponse, key: K): NonNullable<SessionResponse[K]> {
  const answer = response[key];
  if (!answer) throw new Error(`the session answered ${key} with something else`);
  return answer as NonNullable<SessionResponse[K]>;
}

/** The error the unary call would have failed with, for a status code and message. */
function opError(code: number, details: string): ServiceError {
  return callErrorFromStatus({ code, details, metadata: new Metadata() }, '');
}

/** Why an operation in flight failed when its session ended: the address, the cause, and that it may have happened. */
function sessionEnded(address: string, end: StatusObject): ServiceError {
  // No connection was made (connection-errors.ts said why, naming the address): nothing was sent.
  if (end.code === status.UNAVAILABLE && end.details.startsWith(CANNOT_REACH)) return opError(end.code, end.details);
  const cause = end.code === status.OK ? 'it was closed' : `${status[end.code]}: ${end.details}`;
  const code = end.code === status.OK ? status.UNAVAILABLE : end.code;
  return opError(code, `the session with holdfast at ${address} ended before this operation was answered (${cause}); it may or may not have taken effect`);
}
