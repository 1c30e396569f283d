// Waiting without polling. Waiters queue in Redis (FIFO across all servers); the script that
// frees a lock serves the queue head itself and publishes once on the lock's channel. This
// server holds one subscription per lock it has waiters for, and answers the waiters named in
// the message. A timer per lock (not per waiter) refreshes queue entries and looks again when
// the earliest lease would run out, since an expiry publishes nothing.
import type { Cluster, Redis } from 'ioredis';
import type { LockEngine } from './engine';
import { conflictError, grantOf } from './engine';
import { LockError, ScriptCode } from './errors';
import type { AcquireParams, Grant } from './types';

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

type Reply = (string | number | Reply)[];

export interface WaitRoomStats {
  /** Queued waiters this server answers (each with its own deadline timer). */
  waiters: number;
  /** Locks this server has waiters on. */
  lines: number;
  /** Lock channels this server's subscriber has confirmed and not yet left. */
  subscriptions: number;
  /** Lines with a look-again timer set. */
  lineTimers: number;
  /** Lines with a claim-4 run in flight. */
  claimsInFlight: number;
}

export class WaitRoom {
  private readonly lines = new Map<string, Line>();
  private readonly byChannel = new Map<string, Line>();
  /** Channels whose SSUBSCRIBE was confirmed and whose SSUNSUBSCRIBE was not yet: the subscriber's, not the lines' view. */
  private readonly subscribed = new Set<string>();

  constructor(
    private readonly engine: LockEngine,
    private readonly subscriber: Redis | Cluster,
    private readonly options: { refreshMs: number; onBackgroundError: (err: unknown) => void },
  ) {
    subscriber.on('smessage', (channel: string, message: string) => this.onMessage(channel, message));
  }

  wait(request: WaitRequest, signal?: AbortSignal): Promise<Grant | null> {
    return new Promise<Grant | null>((resolve, reject) => {
      const waiter: Waiter = { ...request, done: false, servedAt: 0, resolve, reject, cleanup: () => {} };
      const onAbort = () => void this.cancel(waiter);
      const deadlineTimer = setTimeout(onAbort, Math.max(0, request.deadline - performance.now()));
      signal?.addEventListener('abort', onAbort, { once: true });
      waiter.cleanup = () => {
        clearTimeout(deadlineTimer);
        signal?.removeEventListener('abort', onAbort);
      };
      this.join(waiter);
      if (signal?.aborted) onAbort();
    });
  }

  private join(waiter: Waiter): void {
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
    this.subscriber.ssubscribe(line.channel).then(
      () => {
        this.subscribed.add(line.channel);
        void this.check(line);
      },
      (err) => {
        this.options.onBackgroundError(err);
        this.schedule(line, -1);
      },
    );
  }

  private onMessage(channel: string, message: string): void {
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
        const waiters =
          wanted === 'all'
            ? [...line.waiters.values()]
            : [...wanted].flatMap((id) => line.waiters.get(id) ?? []);
        if (waiters.length === 0) continue;
        // No hand-off while grants are blocked (quarantine): look again when they resume.
        const blockedMs = this.engine.grantsResumeInMs(line.name);
        if (blockedMs > 0) {
          this.schedule(line, blockedMs);
          return;
        }
        let reply: Reply;
        let confirmed: boolean;
        const sentAt = performance.now();
        try {
          ({ reply, confirmed } = await this.engine.runConfirmed('claim', line.name, [this.engine.entryLeaseMs, ...waiters.map((w) => w.waiterId)]));
        } catch (err) {
          this.options.onBackgroundError(err);
          this.schedule(line, -1);
          return;
        }
        const results = reply[1] as Reply[];
        await Promise.all(waiters.map((w, i) => this.settle(w, results[i], sentAt, confirmed)));
        this.schedule(line, Number(reply[0]));
      }
    })().finally(() => {
      line.inflight = null;
    });
    return line.inflight;
  }

  private async settle(waiter: Waiter, result: Reply, sentAt: number, confirmed: boolean): Promise<void> {
    const code = result[0];
    if (code === ScriptCode.QUEUED) return;
    if (code === ScriptCode.GRANTED) {
      const grant = grantOf(result, sentAt);
      if (!confirmed) {
        const error = await this.engine.undoUnconfirmed(waiter.params.name, grant.token, waiter.params.holdId);
        this.finish(waiter, () => waiter.reject(error));
      } else if (waiter.done) {
        // The call ended while the grant was on its way: give it back.
        await this.engine.release(waiter.params.name, grant.token, { holdId: waiter.params.holdId }).catch(this.options.onBackgroundError);
      } else {
        // Hand-off: the script that freed the lock served this waiter and published; this much later it has its grant.
        if (waiter.servedAt > 0) this.engine.observer.handoff(performance.now() - waiter.servedAt);
        this.finish(waiter, () => waiter.resolve(grant));
      }
      return;
    }
    if (waiter.done) return;
    if (code === ScriptCode.UPGRADE_REFUSED) {
      this.finish(waiter, () => waiter.reject(conflictError(waiter.params.name, result, waiter.params.limit)));
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
    try {
      await this.engine.run('dequeue', waiter.params.name, [waiter.waiterId]);
      await line?.inflight;
    } catch (err) {
      // The entry and any grant served to it expire by themselves within the entry lease.
      // The caller learns that Redis was unreachable, not that the lock stayed taken.
      error ??= err instanceof LockError ? err : new LockError('unavailable', String(err));
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
      this.subscriber.sunsubscribe(line.channel).then(
        () => this.subscribed.delete(line.channel),
        () => {},
      );
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
    return { waiters, lines: this.lines.size, subscriptions: this.subscribed.size, lineTimers, claimsInFlight };
  }

  async closeAll(error: LockError): Promise<void> {
    const waiters = [...this.lines.values()].flatMap((line) => [...line.waiters.values()]);
    await Promise.all(waiters.map((w) => this.cancel(w, error)));
  }
}
