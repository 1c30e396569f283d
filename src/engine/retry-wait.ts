// Waiting where storage keeps no queue (LockStore.queues false: Redlock's majority votes). A
// waiter tries again until a try grants; between tries it sleeps until a message on the lock's
// channel (a release on any node), the holder's lease end (the refusal's hint) or a backoff,
// whichever comes first, then a random part of the backoff more, so that woken waiters do not
// all collide. There is no order between waiters: whoever tries first after a release wins.
// One subscription per lock channel while any waiter of this server wants it.
import { LockError } from './errors';
import type { LockChannels } from './lock-channels';
import type { AcquireOutcome, EngineObserver } from './observer';
import type { AcquireParams, Grant } from './types';

/** The first retry after a refusal; doubles up to MAX_BACKOFF_MS, always with jitter. */
const MIN_BACKOFF_MS = 10;
const MAX_BACKOFF_MS = 250;

/** What retrying asks of the engine it waits for (LockEngine provides it). */
export interface RetryEngine {
  readonly observer: EngineObserver;
  /** One try with a fresh token: a grant, or how long until the holder's lease ends (-1: unknown). */
  tryOnce(params: AcquireParams): Promise<{ grant?: Grant; nextExpiryMs: number }>;
  channelOf(name: string): string;
  grantsResumeInMs(name: string): number;
}

export interface RetryStats {
  /** Waiting calls (asleep or trying). */
  waiters: number;
  /** Locks this server has retrying waiters on. */
  lines: number;
}

export class RetryWait {
  /** Sleeping waiters' wake-ups, by channel. */
  private readonly sleepers = new Map<string, Set<() => void>>();
  /** Waiting calls by lock name: its channel is subscribed while any remain. */
  private readonly waiting = new Map<string, number>();
  private closed: LockError | null = null;
  private readonly onMessage = (channel: string) => {
    for (const wake of [...(this.sleepers.get(channel) ?? [])]) wake();
  };

  constructor(
    private readonly engine: RetryEngine,
    private readonly channels: LockChannels,
  ) {}

  /**
   * Tries, then (when it may wait) retries until granted, the deadline or an abort (null). A
   * grant that raced an abort is returned: the caller gives it back.
   */
  async acquire(params: AcquireParams, deadline: number, signal?: AbortSignal): Promise<Grant | null> {
    // A try-once caller is told UNAVAILABLE while grants are blocked; a waiting one waits it out.
    const first = params.waitMs > 0 ? await this.tryOnce(params) : await this.engine.tryOnce(params);
    if (first.grant || params.waitMs <= 0 || deadline <= performance.now() || signal?.aborted) return first.grant ?? null;
    return this.retry(params, deadline, first.nextExpiryMs, signal);
  }

  private async retry(params: AcquireParams, deadline: number, hint: number, signal?: AbortSignal): Promise<Grant | null> {
    const channel = this.engine.channelOf(params.name);
    const probe = this.engine.observer.waitStart();
    let outcome: AcquireOutcome = 'error';
    await this.listen(params.name, channel);
    try {
      let backoff = MIN_BACKOFF_MS;
      // A release may have come before the subscription: look once more at once.
      for (let first = true; ; first = false) {
        if (this.closed) throw this.closed;
        const left = deadline - performance.now();
        if (left <= 0 || signal?.aborted) {
          outcome = 'not_granted';
          return null;
        }
        if (!first) {
          await this.sleep(channel, Math.min(left, Math.max(hint, backoff)), signal);
          await new Promise((resolve) => setTimeout(resolve, Math.random() * backoff));
          backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
          if (this.closed) throw this.closed;
        }
        const result = await this.tryOnce(params);
        if (result.grant) {
          outcome = signal?.aborted ? 'not_granted' : 'granted';
          return result.grant;
        }
        hint = result.nextExpiryMs;
      }
    } finally {
      this.unlisten(params.name, channel);
      this.engine.observer.waitEnd(probe, outcome);
    }
  }

  /** One try; grants blocked (a quarantine, too few nodes) is waited out like a refusal. */
  private async tryOnce(params: AcquireParams): Promise<{ grant?: Grant; nextExpiryMs: number }> {
    try {
      return await this.engine.tryOnce(params);
    } catch (err) {
      if (!(err instanceof LockError && err.kind === 'unavailable')) throw err;
      return { nextExpiryMs: Math.max(this.engine.grantsResumeInMs(params.name), MIN_BACKOFF_MS) };
    }
  }

  /** Calls of this server waiting on `name`. */
  waitingOn(name: string): number {
    return this.waiting.get(name) ?? 0;
  }

  private async listen(name: string, channel: string): Promise<void> {
    const users = this.waiting.get(name) ?? 0;
    this.waiting.set(name, users + 1);
    if (users > 0) return;
    this.sleepers.set(channel, new Set());
    // A missed wake-up costs one backoff, not correctness: a failed subscription is no error.
    await this.channels.join(channel, this.onMessage).catch(() => {});
  }

  private unlisten(name: string, channel: string): void {
    const users = (this.waiting.get(name) ?? 1) - 1;
    if (users > 0) {
      this.waiting.set(name, users);
      return;
    }
    this.waiting.delete(name);
    this.sleepers.delete(channel);
    this.channels.leave(channel, this.onMessage);
  }

  /** Resolves at the next message on `channel`, after `ms`, or when `signal` aborts. */
  private sleep(channel: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const set = this.sleepers.get(channel) ?? new Set();
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  stats(): RetryStats {
    let waiters = 0;
    for (const count of this.waiting.values()) waiters += count;
    return { waiters, lines: this.waiting.size };
  }

  /** Shutdown: every waiting call ends with `error`. */
  closeAll(error: LockError): void {
    this.closed = error;
    for (const channel of this.sleepers.keys()) this.onMessage(channel);
  }
}
