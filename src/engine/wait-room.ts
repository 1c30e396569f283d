// Waiting without polling. Waiters queue in Redis (FIFO across all servers); the script that
// frees a lock serves the queue head itself and publishes once on the lock's channel. This
// server holds one subscription per lock it has waiters for, and answers the waiters named in
// the message. A timer per lock (not per waiter) refreshes queue entries and looks again when
// the earliest lease would run out, since an expiry publishes nothing.
// A release this server sends hands the lock to this server's own waiters in its reply (one
// round trip, no publish, no claim): releasing() answers them.
import type { DeadlockDetector } from './deadlocks';
import { LockError } from './errors';
import type { LockChannels } from './lock-channels';
import type { EngineObserver } from './observer';
import { conflictError, grantOf } from './replies';
import type { ClaimAnswer, ClaimEntry, HandOff, ReleaseAnswer } from './store';
import type { AcquireParams, Grant, ReleaseOptions } from './types';

/** What the wait room asks of the engine it waits for (LockEngine provides it). */
export interface WaitRoomEngine {
  readonly entryLeaseMs: number;
  readonly observer: EngineObserver;
  /** One run of acquire-4 for a waiter: granted, refused, or queued again. */
  attempt(params: AcquireParams, token: string, waiterId: string): Promise<{ grant?: Grant; queued?: boolean; nextExpiryMs: number }>;
  /** Serves this server's waiters on `name`: their grants, and their queue entries refreshed. */
  claim(name: string, waiterIds: string[]): Promise<ClaimAnswer>;
  dequeue(name: string, waiterId: string): Promise<void>;
  /** A grant the replicas did not confirm: given back, and the error to answer with. */
  undoUnconfirmed(name: string, token: string, holdId: string): Promise<LockError>;
  release(name: string, token: string, options?: ReleaseOptions): Promise<unknown>;
  channelOf(name: string): string;
  grantsResumeInMs(name: string): number;
}

export interface WaitRequest {
  params: AcquireParams;
  token: string;
  waiterId: string;
  /** performance.now() value at which the wait gives up. */
  deadline: number;
  nextExpiryMs: number;
}

interface Waiter extends WaitRequest {
  done: boolean;
  /** performance.now() when a message said the queue served this waiter (0: none yet). */
  servedAt: number;
  resolve(grant: Grant | null): void;
  reject(err: unknown): void;
  cleanup(): void;
}

/** The waiters this server has on one lock. */
interface Line {
  name: string;
  channel: string;
  waiters: Map<string, Waiter>;
  timer?: NodeJS.Timeout;
  timerAt: number;
  inflight: Promise<void> | null;
  /** Waiters the next claim-4 run is for: all of them (refresh), or those a message named. */
  wanted: Set<string> | 'all';
}

/** A grant release-4 handed to a waiter before its Acquire's reply (queued) came back. */
interface EarlyGrant {
  grant: Grant;
  confirmed: boolean;
}

export interface WaitRoomStats {
  /** Queued waiters this server answers (each with its own deadline timer). */
  waiters: number;
  /** Locks this server has waiters on. */
  lines: number;
  /** Lock channels this server's subscriber has confirmed and not yet left (for waiters or watchers). */
  subscriptions: number;
  /** Lines with a look-again timer set. */
  lineTimers: number;
  /** Lines with a claim-4 run in flight. */
  claimsInFlight: number;
}

export class WaitRoom {
  private readonly lines = new Map<string, Line>();
  private readonly byChannel = new Map<string, Line>();
  /** Waiter ids sent in an acquire-4 whose reply is not in yet, with a grant a release handed one meanwhile. */
  private readonly expected = new Map<string, EarlyGrant | null>();
  /** Waiters whose call ended while their dequeue-4 runs: a hand-off that raced it is given back. */
  private readonly leaving = new Map<string, Waiter>();
  /** Releases in flight per lock, until their hand-offs are answered. */
  private readonly releases = new Map<string, Set<Promise<unknown>>>();
  private readonly onMessage = (channel: string, message: string) => this.heard(channel, message);

  constructor(
    private readonly engine: WaitRoomEngine,
    private readonly channels: LockChannels,
    private readonly options: { refreshMs: number; onBackgroundError: (err: unknown) => void; deadlocks?: DeadlockDetector },
  ) {}

  wait(request: WaitRequest, signal?: AbortSignal): Promise<Grant | null> {
    return new Promise<Grant | null>((resolve, reject) => {
      const waiter: Waiter = { ...request, done: false, servedAt: 0, resolve, reject, cleanup: () => {} };
      const onAbort = () => void this.cancel(waiter);
      const deadlineTimer = setTimeout(onAbort, Math.max(0, request.deadline - performance.now()));
      signal?.addEventListener('abort', onAbort, { once: true });
      const { name, owner, waitAs } = request.params;
      const unwatch = this.options.deadlocks?.watch({ name, owner: owner || waitAs || '', waiterId: request.waiterId, deadline: request.deadline });
      waiter.cleanup = () => {
        clearTimeout(deadlineTimer);
        signal?.removeEventListener('abort', onAbort);
        unwatch?.();
      };
      this.join(waiter);
      if (signal?.aborted) onAbort();
    });
  }

  /** Names a waiter id about to be queued by acquire-4, so that a hand-off can find it before it waits. */
  expect(waiterId: string): string {
    this.expected.set(waiterId, null);
    return waiterId;
  }

  /** Its acquire-4 did not queue it (or failed): give back a grant a release handed it anyway. */
  unexpect(params: AcquireParams, waiterId: string): void {
    const early = this.expected.get(waiterId);
    this.expected.delete(waiterId);
    if (early?.confirmed) void this.giveBack(params.name, early.grant.token, params.holdId);
  }

  hasWaiters(name: string): boolean {
    return this.lines.has(name);
  }

  /**
   * Follows a release that may hand the lock to this server's waiters (its handedOff): answers
   * them as soon as the answer is in, before the releaser hears back.
   * `leaseStart` is when the release was sent: each handed-off lease runs no earlier than that.
   */
  releasing(name: string, sent: Promise<ReleaseAnswer>, leaseStart: number): Promise<ReleaseAnswer> {
    const handled = sent.then((answer) => {
      if (answer.held && answer.handedOff.length > 0) this.handOver(name, answer.handedOff, leaseStart, answer.confirmed);
      return answer;
    });
    let inFlight = this.releases.get(name);
    if (!inFlight) this.releases.set(name, (inFlight = new Set()));
    const running = inFlight;
    running.add(handled);
    const done = () => {
      running.delete(handled);
      if (running.size === 0 && this.releases.get(name) === running) this.releases.delete(name);
    };
    handled.then(done, done);
    return handled;
  }

  private handOver(name: string, handedOff: HandOff[], leaseStart: number, confirmed: boolean): void {
    for (const entry of handedOff) {
      const { waiterId } = entry;
      const grant = grantOf(entry.grant, leaseStart);
      const waiter = this.lines.get(name)?.waiters.get(waiterId) ?? this.leaving.get(waiterId);
      if (waiter) {
        if (waiter.servedAt === 0) waiter.servedAt = performance.now();
        void this.answer(waiter, grant, confirmed);
      } else if (this.expected.has(waiterId)) this.expected.set(waiterId, { grant, confirmed });
      else if (confirmed) void this.giveBack(name, grant.token, entry.holdId);
    }
  }

  private giveBack(name: string, token: string, holdId: string): Promise<unknown> {
    return this.engine.release(name, token, { holdId }).catch(this.options.onBackgroundError);
  }

  private join(waiter: Waiter): void {
    const early = this.expected.get(waiter.waiterId);
    this.expected.delete(waiter.waiterId);
    if (early) {
      void this.answer(waiter, early.grant, early.confirmed);
      return;
    }
    const { name } = waiter.params;
    const existing = this.lines.get(name);
    if (existing) {
      existing.waiters.set(waiter.waiterId, waiter);
      this.schedule(existing, waiter.nextExpiryMs);
      return;
    }
    const line: Line = {
      name,
      channel: this.engine.channelOf(name),
      waiters: new Map([[waiter.waiterId, waiter]]),
      timerAt: Infinity,
      inflight: null,
      wanted: new Set(),
    };
    this.lines.set(name, line);
    this.byChannel.set(line.channel, line);
    // The queue may have served us before the subscription was ready: look once it is.
    this.channels.join(line.channel, this.onMessage).then(
      () => void this.check(line),
      (err) => {
        this.options.onBackgroundError(err);
        this.schedule(line, -1);
      },
    );
  }

  private heard(channel: string, message: string): void {
    const line = this.byChannel.get(channel);
    if (!line) return;
    const [kind, ...rest] = message.split(' ');
    if (kind === 'g') {
      const heardAt = performance.now();
      const ours = rest.filter((id) => {
        const waiter = line.waiters.get(id);
        if (waiter && waiter.servedAt === 0) waiter.servedAt = heardAt;
        return waiter !== undefined;
      });
      if (ours.length > 0) void this.check(line, ours);
    }
    if (kind === 'd') this.schedule(line, Number(rest[0]));
  }

  /** Looks again after `inMs` (when a lease would end), or after the refresh interval if sooner. */
  private schedule(line: Line, inMs: number): void {
    const delay = inMs >= 0 ? Math.min(inMs + 1, this.options.refreshMs) : this.options.refreshMs;
    const at = performance.now() + delay;
    if (line.timer && line.timerAt <= at) return;
    clearTimeout(line.timer);
    line.timerAt = at;
    line.timer = setTimeout(() => {
      line.timer = undefined;
      line.timerAt = Infinity;
      void this.check(line);
    }, delay);
  }

  /**
   * Runs claim-4 for the waiters named (a message said the queue served them) or, without
   * `only`, for all of them (the timer: refresh entries, look for expired holders).
   * At most one run in flight per line; requests made meanwhile are merged into the next.
   */
  private check(line: Line, only?: string[]): Promise<void> {
    if (!only) line.wanted = 'all';
    else if (line.wanted !== 'all') for (const id of only) line.wanted.add(id);
    if (line.inflight) return line.inflight;
    line.inflight = (async () => {
      while (line.wanted === 'all' || line.wanted.size > 0) {
        const wanted = line.wanted;
        line.wanted = new Set();
        const waiters = wanted === 'all' ? [...line.waiters.values()] : [...wanted].flatMap((id) => line.waiters.get(id) ?? []);
        if (waiters.length === 0) continue;
        // No hand-off while grants are blocked (quarantine): look again when they resume.
        const blockedMs = this.engine.grantsResumeInMs(line.name);
        if (blockedMs > 0) {
          this.schedule(line, blockedMs);
          return;
        }
        let answer: ClaimAnswer;
        const sentAt = performance.now();
        try {
          answer = await this.engine.claim(
            line.name,
            waiters.map((w) => w.waiterId),
          );
        } catch (err) {
          this.options.onBackgroundError(err);
          this.schedule(line, -1);
          return;
        }
        await Promise.all(waiters.map((w, i) => this.settle(w, answer.waiters[i], sentAt, answer.confirmed)));
        this.schedule(line, answer.nextExpiryMs);
      }
    })().finally(() => {
      line.inflight = null;
    });
    return line.inflight;
  }

  private async settle(waiter: Waiter, result: ClaimEntry, sentAt: number, confirmed: boolean): Promise<void> {
    if (result.outcome === 'queued') return;
    if (result.outcome === 'granted') return this.answer(waiter, grantOf(result.grant, sentAt), confirmed);
    // Gone: a release of ours may have handed it the lock, its reply not yet answered.
    if (result.outcome === 'gone') await this.releasesOn(waiter.params.name);
    if (waiter.done) return;
    if (result.outcome === 'refused') {
      const { refusal } = result;
      this.finish(waiter, () => waiter.reject(conflictError(waiter.params.name, refusal, waiter.params.limit)));
      return;
    }
    if (result.outcome === 'aborted') {
      const { message } = result;
      this.engine.observer.deadlock();
      this.finish(waiter, () => waiter.reject(new LockError('deadlock', message)));
      return;
    }
    // Our entry expired (this server stalled past the entry lease): queue again at the back.
    try {
      const again = await this.engine.attempt(waiter.params, waiter.token, waiter.waiterId);
      if (again.grant) this.finish(waiter, () => waiter.resolve(again.grant!));
      else if (!again.queued) this.finish(waiter, () => waiter.resolve(null));
    } catch (err) {
      this.finish(waiter, () => waiter.reject(err));
    }
  }

  /** A grant made for this waiter: its answer, or given back when its call has ended. */
  private async answer(waiter: Waiter, grant: Grant, confirmed: boolean): Promise<void> {
    if (!confirmed) {
      const error = await this.engine.undoUnconfirmed(waiter.params.name, grant.token, waiter.params.holdId);
      this.finish(waiter, () => waiter.reject(error));
    } else if (waiter.done) {
      // The call ended while the grant was on its way: give it back.
      await this.giveBack(waiter.params.name, grant.token, waiter.params.holdId);
    } else {
      // Hand-off: the script that freed the lock served this waiter; this much later it has its grant.
      if (waiter.servedAt > 0) this.engine.observer.handoff(performance.now() - waiter.servedAt);
      this.finish(waiter, () => waiter.resolve(grant));
    }
  }

  /** Resolves once the releases in flight on `name` now have answered their hand-offs. */
  private async releasesOn(name: string): Promise<void> {
    const inFlight = this.releases.get(name);
    if (inFlight) await Promise.allSettled([...inFlight]);
  }

  private finish(waiter: Waiter, answer: () => void): void {
    if (waiter.done) return;
    waiter.done = true;
    waiter.cleanup();
    this.leave(waiter);
    answer();
  }

  /** Deadline or abort: leave the queue, and give back a grant that raced the cancellation. */
  private async cancel(waiter: Waiter, error?: LockError): Promise<void> {
    if (waiter.done) return;
    waiter.done = true;
    waiter.cleanup();
    const line = this.leave(waiter);
    this.leaving.set(waiter.waiterId, waiter);
    try {
      await this.engine.dequeue(waiter.params.name, waiter.waiterId);
      await line?.inflight;
      await this.releasesOn(waiter.params.name);
    } catch (err) {
      // The entry and any grant served to it expire by themselves within the entry lease.
      // The caller learns that Redis was unreachable, not that the lock stayed taken.
      error ??= err instanceof LockError ? err : new LockError('unavailable', String(err));
    } finally {
      this.leaving.delete(waiter.waiterId);
    }
    if (error) waiter.reject(error);
    else waiter.resolve(null);
  }

  private leave(waiter: Waiter): Line | undefined {
    const line = this.lines.get(waiter.params.name);
    if (!line) return undefined;
    line.waiters.delete(waiter.waiterId);
    if (line.waiters.size === 0) {
      clearTimeout(line.timer);
      this.lines.delete(line.name);
      this.byChannel.delete(line.channel);
      this.channels.leave(line.channel, this.onMessage);
    }
    return line;
  }

  /** Counted when asked (GetServerStats), so waiting itself does no extra work. */
  stats(): WaitRoomStats {
    let waiters = 0;
    let lineTimers = 0;
    let claimsInFlight = 0;
    for (const line of this.lines.values()) {
      waiters += line.waiters.size;
      if (line.timer) lineTimers++;
      if (line.inflight) claimsInFlight++;
    }
    return { waiters, lines: this.lines.size, subscriptions: this.channels.size, lineTimers, claimsInFlight };
  }

  async closeAll(error: LockError): Promise<void> {
    const waiters = [...this.lines.values()].flatMap((line) => [...line.waiters.values()]);
    await Promise.all(waiters.map((w) => this.cancel(w, error)));
  }
}
