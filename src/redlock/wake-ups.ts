// Redlock mode's waiting has no queue: a waiter retries until a majority votes for it. Between
// tries it sleeps until a release on any master publishes on the lock's channel (or a backoff
// passes). One subscription per channel, on every master, while any waiter wants it.
import type { RedlockNode } from './nodes';

export class WakeUps {
  /** Wake-ups by channel: each sleeping waiter's resolver. */
  private readonly wakers = new Map<string, Set<() => void>>();
  /** Waiting calls by channel (awake or asleep): the channel is subscribed while any remain. */
  private readonly listeners = new Map<string, number>();

  constructor(
    private readonly nodes: RedlockNode[],
    /** How long one node may take to answer: a subscription waits no longer for a silent one. */
    private readonly nodeTimeoutMs: number,
  ) {}

  async listen(channel: string): Promise<void> {
    const users = this.listeners.get(channel) ?? 0;
    this.listeners.set(channel, users + 1);
    if (users > 0) return;
    this.wakers.set(channel, new Set());
    // A node that is down or frozen would hold the subscription up: wait for the others only as
    // long as a node may take to answer (a missed wake-up costs one backoff, not correctness).
    const subscribed = Promise.all(this.nodes.map((n) => n.subscribe(channel).catch(() => {})));
    await Promise.race([subscribed, new Promise((resolve) => setTimeout(resolve, this.nodeTimeoutMs))]);
  }

  unlisten(channel: string): void {
    const users = (this.listeners.get(channel) ?? 1) - 1;
    if (users > 0) {
      this.listeners.set(channel, users);
      return;
    }
    this.listeners.delete(channel);
    this.wakers.delete(channel);
    for (const n of this.nodes) n.unsubscribe(channel).catch(() => {});
  }

  wake(channel: string): void {
    const set = this.wakers.get(channel);
    if (!set) return;
    for (const resolve of [...set]) resolve();
  }

  /** Wakes every sleeping waiter (shutdown). */
  wakeAll(): void {
    for (const channel of this.wakers.keys()) this.wake(channel);
  }

  /** Resolves at the next wake-up on `channel`, after `ms`, or when `signal` aborts. */
  wakeUpOrAfter(channel: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const set = this.wakers.get(channel) ?? new Set();
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

  /** Waiters asleep on one channel. */
  sleepingOn(channel: string): number {
    return this.wakers.get(channel)?.size ?? 0;
  }

  /** Waiters asleep, and the channels this server listens on. */
  stats(): { waiters: number; channels: number } {
    let waiters = 0;
    for (const set of this.wakers.values()) waiters += set.size;
    return { waiters, channels: this.wakers.size };
  }
}
