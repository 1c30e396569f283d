// Session: one stream carrying many lock operations, each answered by its op_id as soon as it is
// done (src/transport/session-ops.ts runs them as their unary twins). Locks taken with `hold` and
// `hold_set` join the session's one open lease group (src/engine/lease-group.ts), kept as a Hold's
// are, reported in one SessionRenewed per renewal round trip, and live as long as the session. The
// session ends as a Hold does (the group's end rule): on its holder's word (close, half-close, a
// cancel from a live client) every lock is given back at once; a stream that vanished leaves them
// until the leases its client was told of have run out.
//
// Back-pressure: at max-session-ops operations in flight, or while the client does not read its
// answers, the server stops reading the stream, so HTTP/2 flow control slows the sender and no
// request piles up in server memory. Waiting operations have their own, lower cap
// (max-session-waiters, over it RESOURCE_EXHAUSTED), so that quick operations, cancels among
// them, are always read soon.
import { status, type Metadata, type ServerDuplexStream } from '@grpc/grpc-js';
import type { SessionRequest, SessionResponse } from '../../gen/holdfast/v1/lock';
import type { LockBackend } from '../engine/backend';
import type { GroupLease, LeaseGroup } from '../engine/lease-group';
import { randomId } from '../engine/random-ids';
import type { LostReason } from '../engine/types';
import { callScope, peerAnswers } from './call-context';
import { rejectedOp } from './decode';
import { endWithStream, LOST_CODE, type HoldOptions } from './hold';
import { msSince } from './operations';
import { OP_KINDS, OP_METHOD, runOp, type OpKind, type OpResult } from './session-ops';
import { MAX_WAIT_MS } from '../config/bounds';
import { checkMillis, toSetParams } from './requests';
import { lostLeaseError, serviceError, toServiceError } from './status';

export interface SessionLimits {
  /** Operations in flight on one session; at the cap the server stops reading the stream. */
  maxSessionOps: number;
  /** Waiting operations (acquire or hold with wait_timeout_ms > 0) in flight; over it: RESOURCE_EXHAUSTED. */
  maxSessionWaiters: number;
  /** Locks held with `hold` (granted or being acquired); over it: RESOURCE_EXHAUSTED. */
  maxSessionLocks: number;
}

export interface SessionOptions extends HoldOptions, SessionLimits {
  /** Why the caller may not run the unary RPC at `path` (its role), or undefined: applied to each operation. */
  opRefusal?(metadata: Metadata, path: string): { code: status; details: string } | undefined;
  /** Told of each answered operation: its unary twin's method name and the status code (metrics). */
  onOp?(method: string, code: status): void;
  /** Runs one operation inside a span of its own (traces); `end` is told its status once. */
  traceOp?<T>(method: string, lock: string, run: () => T): { result: T; end(code: number, details: string): void };
  /**
   * The caller's namespace caps: a session's waits and locks count in them as waiting calls and
   * Hold streams do. take() says why not, or counts one.
   */
  namespaceSlots?: NamespaceSlots;
}

export interface NamespaceSlots {
  take(kind: 'waiters' | 'holds'): string | undefined;
  give(kind: 'waiters' | 'holds'): void;
}

type SessionCall = ServerDuplexStream<SessionRequest, SessionResponse>;

interface InFlight {
  /** Only for operations that take a lock (they may wait, and a grant must be undone): the others just run. */
  controller?: AbortController;
  waits: boolean;
  method: string;
  /** Answered (or cancelled): a result that comes later is undone. */
  done: boolean;
  /** Closes the operation's span (traces). */
  traced?(code: number, details: string): void;
  /** Ends the operation at its deadline_ms. */
  deadline?: NodeJS.Timeout;
}

const SERVICE_PATH = '/holdfast.v1.LockService/';
/** Operations that take a lock: a cancel stops them. An AbortController each costs a few % of a session's CPU. */
const TAKES_LOCK: ReadonlySet<OpKind> = new Set(['acquire', 'hold', 'acquireSet', 'holdSet']);
const NEVER = new AbortController().signal;
/** One shared reason: abort() without one would build a DOMException for every cancel. */
const STOPPED = Object.freeze(new Error('the operation was cancelled or its session ended'));

/** Why a SessionRequest's deadline_ms is refused, or undefined (checked as the RPCs check their *_ms fields). */
function deadlineProblem(deadlineMs: string): string | undefined {
  if (deadlineMs === '0') return undefined; // nearly every operation: no BigInt parsed on the hot path
  try {
    checkMillis('deadline_ms', deadlineMs, 0, MAX_WAIT_MS);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

const SESSION_LOST = (locks: number) =>
  `the session stream ended without a cancel (the connection was lost); its ${locks} locks stay held until their leases run out`;

function waitsForLock(kind: OpKind, request: SessionRequest): boolean {
  return TAKES_LOCK.has(kind) && Number((request[kind] as { waitTimeoutMs?: string })?.waitTimeoutMs || 0) > 0;
}

/** The locks an operation may add to the session's held ones: a hold's one, a hold_set's members. */
function locksAsked(kind: OpKind, request: SessionRequest, defaultTtlMs: number): number {
  if (kind === 'hold') return 1;
  if (kind !== 'holdSet') return 0;
  try {
    return toSetParams(request.holdSet!, defaultTtlMs).names.length;
  } catch {
    return 0; // a set its own checks refuse holds nothing: they answer it (INVALID_ARGUMENT naming the field), not a cap
  }
}

/** The lock an operation is about, for its span: a set's names joined by commas. */
function lockNameOf(kind: OpKind, request: SessionRequest): string {
  if (kind === 'acquireSet' || kind === 'holdSet') return request[kind]!.names.join(',');
  if (kind === 'releaseSet') return request.releaseSet!.members.map((m) => m.name).join(',');
  return request[kind]?.name ?? '';
}

export function sessionHandler(engine: LockBackend, options: SessionOptions) {
  return (call: SessionCall) => new Session(engine, options, call).start();
}

class Session {
  /** Every time told to the client counts from here: it anchors them at when it opened the stream. */
  private readonly startedAt = performance.now();
  private readonly inFlight = new Map<string, InFlight>();
  private readonly scope;
  /** The locks its hold and hold_set operations took (max-session-locks counts them). */
  private readonly group: LeaseGroup;
  /** Who this session's operations without an owner are for deadlock detection (no reentrancy: docs/deadlocks.md). */
  private readonly waitAs = `session:${randomId(9)}`;
  private waiting = 0;
  /** Locks that hold and hold_set operations in flight may add (a set's members each count). */
  private holdsPending = 0;
  /** Namespace hold slots taken: one per lock held and per hold operation in flight. */
  private holdSlots = 0;
  /** No operation is read any more: the session ends once those in flight are answered. */
  private closing = false;
  /** The stream has ended (or is ending): nothing more is written. */
  private over = false;
  private writeBlocked = false;

  constructor(
    private readonly engine: LockBackend,
    private readonly options: SessionOptions,
    private readonly call: SessionCall,
  ) {
    this.scope = callScope(call);
    // One listener for the whole session: a held lock refers to it, rather than to closures of its own.
    this.group = engine.group(
      {
        renewed: ({ ttlMs, leaseStart, members }) =>
          this.write({ opId: '0', renewed: { ttlMs: String(ttlMs), leaseStartedAfterMs: msSince(this.startedAt, leaseStart), locks: members } }),
        lost: (set, member, reason, message) => this.lost(set.tag, member, reason, message),
      },
      options,
    );
  }

  start(): void {
    this.call.on('data', (message: unknown) => this.receive(message));
    // A half-close is the client's word only if its connection is still up: a killed client's
    // connection ends every stream the same way (EOF), and that must not free its locks.
    this.call.on('end', () => void peerAnswers(this.call).then((alive) => alive && this.close()));
    this.scope.signal.addEventListener('abort', () => this.ended());
  }

  private receive(message: unknown): void {
    if (this.closing || this.over) return;
    const bad = rejectedOp(message);
    if (!bad) {
      this.request(message as SessionRequest);
    } else if (bad.opId === undefined) {
      // Without a readable op_id there is no operation to answer: the stream itself is refused.
      this.fail(status.INVALID_ARGUMENT, bad.message);
    } else {
      this.answerError(bad.opId, 'Session', status.INVALID_ARGUMENT, bad.message);
    }
  }

  private request(request: SessionRequest): void {
    if (request.close) {
      this.close();
    } else if (request.cancel !== undefined) {
      this.cancel(request.cancel);
    } else if (request.ping) {
      // Its client re-anchors its lease deadlines on it (docs/sessions.md). Rounded up, where lease
      // times are rounded down: either way the client's deadline can only come out earlier.
      const receivedAfterMs = Math.ceil(performance.now() - this.startedAt);
      this.write({ opId: request.opId, pong: { receivedAfterMs: String(receivedAfterMs) } });
    } else {
      const kind = OP_KINDS.find((k) => request[k] !== undefined);
      const locks = kind ? locksAsked(kind, request, this.options.defaultTtlMs) : 0;
      const refusal = kind
        ? this.refusal(request.opId, kind, request, locks)
        : { code: status.INVALID_ARGUMENT, message: `op is required: one of ${OP_KINDS.join(', ')}, ping, cancel or close` };
      if (refusal) this.answerError(request.opId, kind ? OP_METHOD[kind] : 'Session', refusal.code, refusal.message);
      else this.begin(request.opId, kind!, request, locks);
    }
  }

  /** Why the session itself refuses the operation (its id, the caller's role, a cap), or undefined. */
  private refusal(opId: string, kind: OpKind, request: SessionRequest, asked: number): { code: status; message: string } | undefined {
    if (this.inFlight.has(opId)) return { code: status.INVALID_ARGUMENT, message: `op_id ${opId} is in flight already: give each operation its own id` };
    const badDeadline = deadlineProblem(request.deadlineMs);
    if (badDeadline) return { code: status.INVALID_ARGUMENT, message: badDeadline };
    const refused = this.options.opRefusal?.(this.call.metadata, SERVICE_PATH + OP_METHOD[kind]);
    if (refused) return { code: refused.code, message: refused.details };
    if (waitsForLock(kind, request) && this.waiting >= this.options.maxSessionWaiters) {
      return {
        code: status.RESOURCE_EXHAUSTED,
        message: `this session has ${this.waiting} operations waiting for locks, the most max-session-waiters allows; wait for fewer locks at once`,
      };
    }
    const locks = this.group.size + this.holdsPending;
    if (asked > 0 && locks + asked > this.options.maxSessionLocks) {
      return {
        code: status.RESOURCE_EXHAUSTED,
        message:
          asked === 1
            ? `this session holds ${locks} locks, the most max-session-locks allows; release some or open another session`
            : `this session holds ${locks} locks and this set has ${asked} more, over the ${this.options.maxSessionLocks} max-session-locks allows; release some or open another session`,
      };
    }
    return this.takeNamespaceSlots(kind, request, asked);
  }

  /** Last: a refusal after this would have to give the slots back. */
  private takeNamespaceSlots(kind: OpKind, request: SessionRequest, asked: number): { code: status; message: string } | undefined {
    const slots = this.options.namespaceSlots;
    if (!slots) return undefined;
    const waits = waitsForLock(kind, request);
    const refused = (waits && slots.take('waiters')) || undefined;
    if (refused) return { code: status.RESOURCE_EXHAUSTED, message: refused };
    // One namespace hold slot per lock the operation may hold, as for a Hold stream each.
    for (let taken = 0; taken < asked; taken++) {
      const noHold = slots.take('holds');
      if (noHold) {
        for (; taken > 0; taken--) slots.give('holds');
        if (waits) slots.give('waiters');
        return { code: status.RESOURCE_EXHAUSTED, message: noHold };
      }
    }
    this.holdSlots += asked;
    return undefined;
  }

  /** Gives back the namespace hold slots of locks and hold operations that are gone. */
  private returnHoldSlots(): void {
    for (; this.holdSlots > this.holdsPending + this.group.size; this.holdSlots--) this.options.namespaceSlots?.give('holds');
  }

  /** `holds`: the locks it may add (locksAsked). */
  private begin(opId: string, kind: OpKind, request: SessionRequest, holds: number): void {
    const method = OP_METHOD[kind];
    const waits = waitsForLock(kind, request);
    const op: InFlight = { controller: TAKES_LOCK.has(kind) ? new AbortController() : undefined, waits, method, done: false };
    this.inFlight.set(opId, op);
    if (waits) this.waiting++;
    this.holdsPending += holds;
    if (this.inFlight.size >= this.options.maxSessionOps) this.call.pause();
    const deadlineMs = Number(request.deadlineMs || 0);
    if (deadlineMs > 0) op.deadline = setTimeout(() => this.deadlinePassed(opId, op, deadlineMs), deadlineMs);
    const context = {
      engine: this.engine,
      options: this.options,
      call: this.call,
      anchor: this.startedAt,
      signal: op.controller?.signal ?? NEVER,
      opId,
      group: this.group,
      waitAs: this.waitAs,
    };
    const run = () => runOp(kind, request, context);
    const traced = this.options.traceOp?.(method, lockNameOf(kind, request), run);
    op.traced = traced?.end;
    (traced ? traced.result : run()).then(
      (result) => {
        this.holdsPending -= holds;
        this.settle(opId, op, result);
        this.returnHoldSlots();
      },
      (err) => {
        this.holdsPending -= holds;
        this.returnHoldSlots();
        if (op.done) return;
        const { code, details } = toServiceError(err, this.options.logError);
        this.finishOp(opId, op);
        op.traced?.(code, details);
        this.answerError(opId, method, code, details);
      },
    );
  }

  private settle(opId: string, op: InFlight, result: OpResult): void {
    if (op.done) {
      // Cancelled, or the session ended, while the result was on its way: nothing may stay behind.
      void result.undo?.();
      return;
    }
    this.finishOp(opId, op);
    this.options.onOp?.(op.method, status.OK);
    op.traced?.(status.OK, '');
    this.write({ opId, ...result.response });
  }

  private finishOp(opId: string, op: InFlight, stop = false): void {
    this.dropOp(op, stop);
    this.inFlight.delete(opId);
    this.resumeReading();
    if (this.closing && this.inFlight.size === 0) this.finishClose();
  }

  /** The operation will not be answered (or just was): stop it and give back its waiter slots. */
  private dropOp(op: InFlight, stop: boolean): void {
    op.done = true;
    clearTimeout(op.deadline);
    if (stop) {
      op.controller?.abort(STOPPED);
      op.traced?.(status.CANCELLED, STOPPED.message);
    }
    if (!op.waits) return;
    this.waiting--;
    this.options.namespaceSlots?.give('waiters');
  }

  /** Every operation in flight, dropped unanswered: the session is over. */
  private dropAllOps(): void {
    for (const op of this.inFlight.values()) this.dropOp(op, true);
    this.inFlight.clear();
  }

  /** As a unary call's deadline ends it: answered DEADLINE_EXCEEDED, stopped, and whatever it takes later given back. */
  private deadlinePassed(opId: string, op: InFlight, deadlineMs: number): void {
    if (op.done) return;
    const message = `the operation's deadline_ms (${deadlineMs} ms) passed before it was done`;
    op.traced?.(status.DEADLINE_EXCEEDED, message);
    op.traced = undefined;
    this.finishOp(opId, op, true);
    this.answerError(opId, op.method, status.DEADLINE_EXCEEDED, message);
  }

  private cancel(target: string): void {
    const op = this.inFlight.get(target);
    if (!op) return;
    this.finishOp(target, op, true);
    this.answerError(target, op.method, status.CANCELLED, 'the operation was cancelled by the client');
  }

  /** A lock of this session (and the rest of its set) ended other than by the session's own end; `opId` took it. */
  private lost(opId: string, member: GroupLease, reason: LostReason, message: string): void {
    this.returnHoldSlots();
    if (this.over) return;
    const { name, holdId } = member;
    if (reason !== 'released') this.options.onAbnormalEnd?.({ name, holdId, reason, message });
    this.write({ opId, lost: { reason: message, code: LOST_CODE[reason], name } });
    if (reason === 'server_shutdown') this.fail(status.UNAVAILABLE, 'the server is shutting down');
  }

  /** The holder's clean end: read nothing more, answer what is in flight, then give every lock back and end with OK. */
  private close(): void {
    if (this.closing || this.over) return;
    this.closing = true;
    if (this.inFlight.size === 0) this.finishClose();
  }

  private finishClose(): void {
    if (this.over) return;
    this.over = true;
    this.scope.finish(); // grpc-js reports every end as 'cancelled': this one is no news
    this.group.end({ byHolder: true });
    this.returnHoldSlots();
    this.call.end();
  }

  /** The stream ended under the session: a cancel by its client, its deadline, or a lost connection. */
  private ended(): void {
    this.over = true;
    this.dropAllOps();
    endWithStream(this.group, this.scope, this.call, this.startedAt, this.options, SESSION_LOST);
    this.returnHoldSlots();
  }

  /** Ends the whole session with a status (the engine is gone, or a message could not be read at all). */
  private fail(code: status, details: string): void {
    if (this.over) return;
    this.over = true;
    this.scope.finish();
    this.dropAllOps();
    // Not the holder's word: its client may not have read this end yet, so its leases run out first.
    this.group.end({ byHolder: false });
    this.returnHoldSlots();
    this.call.emit('error', code === status.UNAVAILABLE ? lostLeaseError('server_shutdown', details) : serviceError(code, details));
  }

  private answerError(opId: string, method: string, code: status, message: string): void {
    this.options.onOp?.(method, code);
    this.write({ opId, error: { code, message } });
  }

  private write(response: SessionResponse): void {
    if (this.over) return;
    if (this.call.write(response) || this.writeBlocked) return;
    // The client is not reading its answers: read no more operations until it does.
    this.writeBlocked = true;
    this.call.pause();
    this.call.once('drain', () => {
      this.writeBlocked = false;
      this.resumeReading();
    });
  }

  private resumeReading(): void {
    if (!this.writeBlocked && !this.closing && this.inFlight.size < this.options.maxSessionOps) this.call.resume();
  }
}
