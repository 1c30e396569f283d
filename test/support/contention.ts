// Workers contending for one lock through real servers, each logging its grants as the
// client's conservative window: from the grant's arrival until it stops using it (just before
// its Release) or its lease ends (counted from the Acquire's send time), whichever is first.
// Any two windows that overlap are two holders at once.
import { status } from '@grpc/grpc-js';
import { expect } from 'vitest';
import type { TestClient } from './client';

export interface GrantWindow {
  worker: number;
  /** Date.now() when the Acquire was sent, when its grant arrived, and when the window ends. */
  sentAt: number;
  from: number;
  to: number;
  fencingToken: bigint;
}

export interface Contention {
  windows: GrantWindow[];
  /** UNAVAILABLE answers (Redis away, failover, quarantine, unconfirmed grants). */
  unavailable: number;
  /** Stops the workers and resolves with the windows sorted by arrival (rejects with a worker's failure, once all have ended). */
  stop(): Promise<GrantWindow[]>;
  /** What each worker is doing now (in a call for how long, or ended and why): for a failure's message. */
  describe(): string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts one worker per client: acquire (waiting up to 3 s), hold 2 ms, release; again. */
export function contend(clients: TestClient[], name: string, ttlMs: number): Contention {
  let running = true;
  /** Per worker: Date.now() when its call in flight was sent (0: none), or why it ended. */
  const doing = clients.map(() => ({ since: 0, ended: '' }));
  const contention: Contention = {
    windows: [],
    unavailable: 0,
    async stop() {
      running = false;
      const failed = (await settled).find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      return contention.windows.sort((x, y) => x.from - y.from);
    },
    describe: () =>
      doing
        .map(({ since, ended }, id) => `worker ${id}: ${ended ? `ended (${ended})` : since ? `in a call for ${Date.now() - since} ms` : 'between calls'}`)
        .join('; '),
  };
  const worker = async (id: number, client: TestClient) => {
    while (running) {
      const sentAt = Date.now();
      doing[id].since = sentAt;
      try {
        const grant = await client.acquire({ name, ttlMs: String(ttlMs), waitTimeoutMs: '3000' });
        doing[id].since = 0;
        if (!grant.acquired) continue;
        const window = { worker: id, sentAt, from: Date.now(), to: sentAt + ttlMs, fencingToken: BigInt(grant.fencingToken) };
        contention.windows.push(window);
        await sleep(2);
        window.to = Math.min(window.to, Date.now());
        doing[id].since = Date.now();
        await client.release({ name, token: grant.token }).catch(() => {});
        doing[id].since = 0;
      } catch (err) {
        doing[id].since = 0;
        if ((err as { code?: number }).code !== status.UNAVAILABLE) {
          doing[id].ended = `${(err as { code?: number }).code}: ${(err as Error).message}`;
          throw err;
        }
        contention.unavailable++;
        await sleep(20);
      }
    }
  };
  const workers = clients.map((client, id) => worker(id, client));
  // Watched from the start, so a worker that fails before stop() is never an unhandled rejection: stop() throws it.
  const settled = Promise.allSettled(workers);
  return contention;
}

/** One holder at a time, each with a greater fencing token than the one before. */
export function expectExclusive(windows: GrantWindow[]): void {
  for (let i = 1; i < windows.length; i++) {
    expect(windows[i].from, `grant ${i} (worker ${windows[i].worker}) overlaps the one before`).toBeGreaterThanOrEqual(windows[i - 1].to);
    expect(windows[i].fencingToken).toBeGreaterThan(windows[i - 1].fencingToken);
  }
}

/** The longest time between two grants' arrivals. */
export function longestGap(windows: GrantWindow[]): number {
  let gap = 0;
  for (let i = 1; i < windows.length; i++) gap = Math.max(gap, windows[i].from - windows[i - 1].from);
  return gap;
}
