// One Session stream (docs/sessions.md) that carries this client's acquire, release, renew and
// hold: one message each way per operation instead of a unary call's HEADERS and trailers.
//
// The stream is opened on first use and again after it ends. When it ends with operations in
// flight, each of them rejects with an error naming the address and the cause (it may or may not
// have happened), and every lease held under it is lost at once: the server keeps a vanished
// session's holds only until the leases it reported run out, so none may be counted on past that.
// A session left with nothing in flight and nothing held is closed soon after (IDLE_CLOSE_MS).
//
// While it holds locks, the session pings every PING_EVERY_MS: each pong is an anchor that lease
// deadlines count from (deadline.ts), so their drift allowance does not grow with the session's
// age. A ping also goes out when an operation gets no answer in time. A ping not answered within
// the call timeout means the stream is cut off without an error (a dead peer, a black-holed
// network): the session is cancelled, with everything in it, and the next operation opens another.
import { Metadata, status, type ClientDuplexStream, type ServiceError, type StatusObject } from '@grpc/grpc-js';
// grpc-js's own status → error mapping, so an operation's error is exactly its unary call's.
import { callErrorFromStatus } from '@grpc/grpc-js/build/src/call';
import { CANNOT_REACH } from './connection-errors';
import { deadlockOr } from './errors';
import { sessionLeaseDeadline, type Anchor, type LeaseClock } from './deadline';
import type {
  AcquireRequest,
  AcquireResponse,
  AcquireSetRequest,
  AcquireSetResponse,
  HoldAcquired,
  HoldRequest,
  HoldResponse,
  HoldSetAcquired,
  HoldSetRequest,
  LockServiceClient,
  ReleaseRequest,
  ReleaseResponse,
  ReleaseSetRequest,
  ReleaseSetResponse,
  RenewRequest,
  RenewResponse,
  SessionRequest,
  SessionResponse,
} from '../../gen/holdfast/v1/lock';

/** One operation: a SessionRequest with exactly one of these set. */
type Operation = Pick<SessionRequest, 'acquire' | 'release' | 'renew' | 'hold' | 'ping' | 'acquireSet' | 'releaseSet' | 'holdSet'>;

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

type Member = { name: string; token: string; holdId: string };

interface HeldUnder {
  /** A hold's one lock, or a set's members: each hold_id gives its member back. */
  members: Member[];
  /** Unset while the Lease is being built. */
  holder?: SessionHolder;
}

/** What gives them back: a hold's Release with its hold_id, a set's ReleaseSet of every member's. */
function releaseOf(members: Member[]): Pick<SessionRequest, 'release' | 'releaseSet'> {
  const gone = members.map(({ name, token, holdId }) => ({ name, token, holdId }));
  return gone.length === 1 ? { release: gone[0] } : { releaseSet: { members: gone } };
}

/** deadline_ms 0: the SDK ends an operation with its own call timeout and a `cancel`. */
const NO_DEADLINE = '0';

/** One open stream: its operations in flight and the locks it holds. */
class OpenSession {
  readonly pending = new Map<string, Pending>();
  /** By the op_id of the hold that took each lock. */
  readonly holds = new Map<string, HeldUnder>();
  readonly holdOps = new Map<string, string>(); // hold_id (a set's: each member's) → op_id
  ended = false;
  readonly end: Promise<void>;
  /** The open (performance.now() just before the stream started, received at 0) and the two latest pongs. */
  readonly anchors: Anchor[];
  /**
   * How this session's lease times become deadlines on this side's clock. One `renewed` message
   * reaches every lease with the same times: the last answer is kept, not worked out per lease.
   */
  readonly clock: LeaseClock = (leaseStartedAfterMs, ttlMs) => {
    const last = this.lastDeadline;
    if (last && last.anchors === this.anchorsSeen && last.startedAfterMs === leaseStartedAfterMs && last.ttlMs === ttlMs) return last.deadline;
    const deadline = sessionLeaseDeadline(this.anchors, leaseStartedAfterMs, ttlMs);
    this.lastDeadline = { anchors: this.anchorsSeen, startedAfterMs: leaseStartedAfterMs, ttlMs, deadline };
    return deadline;
  };
  /** Counts pongs, so a kept deadline is worked out again after a new anchor. */
  private anchorsSeen = 0;
  private lastDeadline?: { anchors: number; startedAfterMs: number; ttlMs: number; deadline: number };
  /** Set when this side gave up on the stream (no pong in time): the cause every operation and lease is told. */
  cutOff?: string;
  pinging = false;
  pingTimer?: NodeJS.Timeout;

  constructor(
    readonly call: ClientDuplexStream<SessionRequest, SessionResponse>,
    openedAt: number,
  ) {
    this.anchors = [{ sentAt: openedAt, receivedAfterMs: 0 }];
    this.end = new Promise((resolve) => call.on('status', () => resolve()));
  }

  anchor(sentAt: number, receivedAfterMs: number): void {
    this.anchorsSeen++;
    this.anchors.push({ sentAt, receivedAfterMs });
    if (this.anchors.length > 3) this.anchors.splice(1, 1);
  }

  /** `request` is the caller's own new object: it is completed in place rather than copied. */
  send(request: Partial<SessionRequest> & { opId: string }): void {
    // Every scalar field set: the generated encoder reads each one (an unset deadline_ms would be undefined).
    request.deadlineMs ??= NO_DEADLINE;
    if (!this.ended) this.call.write(request as SessionRequest);
  }

  /** Registers a hold (or a set's members) taken by op `opId`. */
  keep(opId: string, held: HeldUnder): void {
    this.holds.set(opId, held);
    for (const { holdId } of held.members) this.holdOps.set(holdId, opId);
  }

  forget(opId: string): HeldUnder | undefined {
    const held = this.holds.get(opId);
    if (held) {
      this.holds.delete(opId);
      for (const { holdId } of held.members) this.holdOps.delete(holdId);
    }
    return held;
  }

  /** The hold that `holdId` belongs to is being given back: the `lost` (RELEASED) the server sends next need not be heard. */
  forgetHold(holdId: string): void {
    const opId = holdId ? this.holdOps.get(holdId) : undefined;
    if (opId !== undefined) this.forget(opId);
  }
}

export interface RunOptions {
  /** Added to the call timeout, as a unary call's wait is. */
  extraMs?: number;
  /** Aborting sends `cancel` and rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Builds a lease for a hold (or set) the session granted, its deadlines counted by `clock`; `giveBack` gives it back. */
export type BuildLease<L, Acquired> = (acquired: Acquired, clock: LeaseClock, giveBack: () => void) => L & SessionHolder;

/**
 * A session with no operation in flight and no lock held is closed after this long: an open stream
 * keeps the process alive, and a script that released everything must be able to exit.
 */
export const IDLE_CLOSE_MS = 250;

/** How often a session that holds locks pings, by default: the drift allowance covers at most this plus a lease. */
export const PING_EVERY_MS = 60_000;

/**
 * The server has no Session RPC (UNIMPLEMENTED: a holdfast older than it): nothing an operation
 * asked for was done, so the client makes it again as a unary call (client.ts).
 */
export class SessionUnsupportedError extends Error {
  constructor(address: string, details: string) {
    super(`holdfast at ${address} does not serve the Session RPC (${details})`);
    this.name = 'SessionUnsupportedError';
  }
}

export class SessionConnection {
  private current?: OpenSession;
  /** Set once the server answered UNIMPLEMENTED: no session is opened again. */
  private unsupported?: SessionUnsupportedError;
  private nextOpId = 1;
  private idleTimer?: NodeJS.Timeout;

  constructor(
    private readonly stub: LockServiceClient,
    private readonly address: string,
    private readonly timeoutMs: number,
    private readonly pingEveryMs = PING_EVERY_MS,
  ) {}

  /** Acquire over the session; `clock` counts its lease_started_after_ms from the session's anchors. */
  acquire(request: AcquireRequest, extraMs?: number): Promise<{ grant: AcquireResponse; clock: LeaseClock }> {
    return this.start({ acquire: request }, { extraMs }, (response, session) => ({ grant: answerOf(response, 'acquire'), clock: session.clock }));
  }

  /** AcquireSet over the session; `clock` counts its lease_started_after_ms from the session's anchors. */
  acquireSet = (request: AcquireSetRequest, extraMs?: number): Promise<{ response: AcquireSetResponse; clock: LeaseClock }> =>
    this.start({ acquireSet: request }, { extraMs }, (response, session) => ({ response: answerOf(response, 'acquireSet'), clock: session.clock }));

  releaseSet = (request: ReleaseSetRequest, extraMs?: number): Promise<ReleaseSetResponse> => {
    for (const member of request.members) this.current?.forgetHold(member.holdId);
    return this.run({ releaseSet: request }, 'releaseSet', { extraMs });
  };

  release = (request: ReleaseRequest, extraMs?: number): Promise<ReleaseResponse> => {
    // A hold of this session's given back: the server reports it `lost` (RELEASED) next, which
    // its lease, already released, need not hear.
    this.current?.forgetHold(request.holdId);
    return this.run({ release: request }, 'release', { extraMs });
  };

  renew = (request: RenewRequest, extraMs?: number): Promise<RenewResponse> => this.run({ renew: request }, 'renew', { extraMs });

  /** Holds a lock under the session; rejects with the unary error (DEADLINE_EXCEEDED when not granted in time). */
  hold<L>(request: HoldRequest, build: BuildLease<L, HoldAcquired>, signal?: AbortSignal): Promise<L> {
    return this.start({ hold: request }, { extraMs: Number(request.waitTimeoutMs), signal }, (response, session, opId) => {
      const acquired = answerOf(response, 'hold');
      const member = { name: request.name, token: acquired.token, holdId: acquired.holdId };
      return this.keep(session, opId, { members: [member] }, () => build(acquired, session.clock, () => this.giveBack(session, opId)));
    });
  }

  /** Holds a lock set under the session, every member renewed with its other locks; rejects as hold does. */
  holdSet<L>(request: HoldSetRequest, build: BuildLease<L, HoldSetAcquired>, signal?: AbortSignal): Promise<L> {
    return this.start({ holdSet: request }, { extraMs: Number(request.waitTimeoutMs), signal }, (response, session, opId) => {
      const acquired = answerOf(response, 'holdSet');
      return this.keep(session, opId, { members: acquired.members }, () => build(acquired, session.clock, () => this.giveBack(session, opId)));
    });
  }

  /** Registers a granted hold before its lease is built, so a grant that arrived too late is given back at once. */
  private keep<L>(session: OpenSession, opId: string, held: HeldUnder, build: () => L & SessionHolder): L {
    session.keep(opId, held);
    const lease = build();
    held.holder = lease;
    this.pingWhileHolding(session);
    return lease;
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

  private run<K extends 'release' | 'renew' | 'releaseSet'>(op: Operation, key: K, options: RunOptions): Promise<NonNullable<SessionResponse[K]>> {
    return this.start(op, options, (response) => answerOf(response, key));
  }

  private start<T>(op: Operation, options: RunOptions, onAnswer: (response: SessionResponse, session: OpenSession, opId: string) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      options.signal?.throwIfAborted();
      if (this.unsupported) throw this.unsupported;
      const session = this.session();
      const opId = this.opId();
      const signal = options.signal;
      const onAbort = () => abandon(signal?.reason as Error);
      const timeoutMs = this.timeoutMs + (options.extraMs ?? 0);
      const pending: Pending = {
        lockName: op.acquire?.name ?? op.hold?.name,
        answer: (response, s) => {
          if (response.error) return reject(deadlockOr(opError(response.error.code, response.error.message), pending.lockName));
          try {
            resolve(onAnswer(response, s, opId));
          } catch (err) {
            reject(err as Error);
          }
        },
        reject,
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
      const timer = setTimeout(() => {
        abandon(opError(status.DEADLINE_EXCEEDED, `Deadline exceeded after ${timeoutMs} ms waiting for the session's answer`));
        if (!op.ping) this.probe(session); // is anyone still answering?
      }, timeoutMs);
      timer.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
      session.pending.set(opId, pending);
      session.send({ opId, ...op });
    });
  }

  private opId(): string {
    return String(this.nextOpId++);
  }

  private pingWhileHolding(session: OpenSession): void {
    if (session.pingTimer || session.ended) return;
    session.pingTimer = setInterval(() => {
      if (session.holds.size > 0) this.probe(session);
    }, this.pingEveryMs);
    session.pingTimer.unref();
  }

  /** Pings: the pong re-anchors lease deadlines; no pong within the call timeout cuts the session off. */
  private probe(session: OpenSession): void {
    if (session.pinging || session.ended || session !== this.current) return;
    session.pinging = true;
    const sentAt = performance.now();
    this.start({ ping: {} }, {}, (response, s) => s.anchor(sentAt, Number(answerOf(response, 'pong').receivedAfterMs))).then(
      () => void (session.pinging = false),
      () => {
        session.pinging = false;
        if (session.ended) return;
        session.cutOff = `no answer to a ping within ${this.timeoutMs} ms: the session stream was cut off`;
        session.call.cancel();
      },
    );
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
      const renewed = { ttlMs: response.renewed.ttlMs, leaseStartedAfterMs: response.renewed.leaseStartedAfterMs, signedFences: [] };
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

  /** An acquire, hold or hold_set granted after its caller gave up on it (the answer crossed the cancel): nobody else will release it. */
  private giveBackUnwanted(session: OpenSession, response: SessionResponse, name: string | undefined): void {
    const grant = response.hold ?? (response.acquire?.acquired ? response.acquire : undefined);
    if (response.holdSet) session.send({ opId: this.opId(), ...releaseOf(response.holdSet.members) });
    else if (grant && name !== undefined) session.send({ opId: this.opId(), release: { name, token: grant.token, holdId: response.hold?.holdId ?? '' } });
  }

  /** Gives back a hold whose lease ended on this side (its deadline passed, or a grant came too late). */
  private giveBack(session: OpenSession, opId: string): void {
    const held = session.forget(opId);
    if (!held || session.ended) return;
    session.send({ opId: this.opId(), ...releaseOf(held.members) });
    this.closeWhenIdle(session);
  }

  private onEnd(session: OpenSession, cause: StatusObject): void {
    session.ended = true;
    clearInterval(session.pingTimer);
    if (this.current === session) this.current = undefined;
    const end = session.cutOff ? { ...cause, code: status.UNAVAILABLE, details: session.cutOff } : cause;
    if (end.code === status.UNIMPLEMENTED) this.unsupported = new SessionUnsupportedError(this.address, end.details);
    const ended = this.unsupported ?? sessionEnded(this.address, end);
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

function answerOf<K extends Exclude<keyof SessionResponse, 'opId'>>(response: SessionResponse, key: K): NonNullable<SessionResponse[K]> {
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
