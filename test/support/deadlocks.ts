// The two-owner cycle the deadlock tests close on two servers (docs/deadlocks.md): o1 holds a
// through the first client and o2 holds b through the second; o1 waits for b, then o2 for a.
// The youngest wait, o2's, is the one detection must end.
import { status, type ServiceError } from '@grpc/grpc-js';
import { expect } from 'vitest';
import type { TestClient } from './client';
import { uniqueName } from './redis';
import { waitFor } from './wait';

/** What a waiting Acquire came to, and when. */
export interface WaitOutcome {
  granted: boolean;
  token: string;
  error: ServiceError | null;
  at: number;
}

/** An Acquire that waits (20 s unless told): its outcome, and when it came. */
export function waiting(c: TestClient, name: string, owner: string, { ttlMs = 30_000, waitMs = 20_000 } = {}): Promise<WaitOutcome> {
  return c.acquire({ name, owner, ttlMs: String(ttlMs), waitTimeoutMs: String(waitMs) }).then(
    (r) => ({ granted: r.acquired, token: r.token, error: null, at: performance.now() }),
    (err: ServiceError) => ({ granted: false, token: '', error: err, at: performance.now() }),
  );
}

export interface TwoOwnerCycle<Held> {
  a: string;
  b: string;
  o1: string;
  o2: string;
  /** o1's hold of a, o2's hold of b. */
  held: [Held, Held];
  /** o1's wait for b (granted once o2 gives b back). */
  w1: Promise<WaitOutcome>;
  /** The first wait to end, and performance.now() when the cycle closed. */
  first: WaitOutcome;
  closedAt: number;
}

/**
 * Closes the cycle (on lock `a` if named) and resolves once one wait has ended; `hold` takes a
 * lock for an owner, `waiters` counts a lock's queue. Checks the ended one was o2's, ABORTED within `boundMs`,
 * with the reason in its metadata and a message naming both edges.
 */
export async function closeTwoOwnerCycle<Held>(
  clients: [TestClient, TestClient],
  hold: (c: TestClient, name: string, owner: string) => Promise<Held>,
  waiters: (name: string) => Promise<number>,
  { ttlMs, boundMs, a = uniqueName('a') }: { ttlMs: number; boundMs: number; a?: string },
): Promise<TwoOwnerCycle<Held>> {
  const b = uniqueName('b');
  const [o1, o2] = [uniqueName('owner'), uniqueName('owner')];
  const held: [Held, Held] = [await hold(clients[0], a, o1), await hold(clients[1], b, o2)];
  const w1 = waiting(clients[0], b, o1, { ttlMs });
  await waitFor('o1 to queue on b', async () => (await waiters(b)) === 1);
  const w2 = waiting(clients[1], a, o2, { ttlMs });
  await waitFor('o2 to queue on a', async () => (await waiters(a)) === 1);
  const closedAt = performance.now();
  const first = await Promise.race([w1, w2]);
  expect(first.error?.code).toBe(status.ABORTED);
  expect(first.at - closedAt).toBeLessThan(boundMs);
  const message = first.error!.details;
  expect(message).toMatch(/^deadlock: /);
  expect(first.error!.metadata.get('holdfast-reason')).toEqual(['deadlock']);
  expect(message).toContain(`owner "${o1}" waits for lock "${b}", held by owner "${o2}"`);
  expect(message).toContain(`owner "${o2}" waits for lock "${a}", held by owner "${o1}"`);
  // The youngest wait (o2's, on a) is the one ended.
  expect(message).toContain(`This wait (owner "${o2}" on lock "${a}")`);
  return { a, b, o1, o2, held, w1, first, closedAt };
}
