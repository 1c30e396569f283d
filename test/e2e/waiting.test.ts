// Waiting: a FIFO queue in Redis shared by all replicas, pub/sub wake-ups, deadline-safe cancel.
// Two server replicas on one real redis-server.
import { status } from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { startServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

const env = useServers(2);
let clients: TestClient[];
beforeAll(() => void (clients = env.clients));

const waiters = async (name: string) => (await clients[0].inspect({ name })).waiters;
const median = (xs: number[]) => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)];

describe('waiting', () => {
  it('keeps mutual exclusion for 24 clients over two replicas, with fencing tokens rising in grant order', async () => {
    const name = uniqueName();
    let counter = 0;
    let inside = 0;
    let overlaps = 0;
    const fences: bigint[] = [];
    await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const c = clients[i % 2];
        for (let round = 0; round < 20; round++) {
          const grant = await c.acquire({ name, ttlMs: '10000', waitTimeoutMs: '60000' });
          expect(grant.acquired).toBe(true);
          if (++inside > 1) overlaps++;
          fences.push(BigInt(grant.fencingToken));
          const seen = counter;
          await new Promise((r) => setImmediate(r)); // an await inside the critical section
          counter = seen + 1;
          inside--;
          await c.release({ name, token: grant.token });
        }
      }),
    );
    expect(counter).toBe(24 * 20);
    expect(overlaps).toBe(0);
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]);
  });

  it('grants waiters in arrival order across both replicas, and Inspect counts them', async () => {
    const name = uniqueName();
    const holder = await clients[0].acquire({ name, ttlMs: '30000' });
    const order: number[] = [];
    const done: Promise<void>[] = [];
    for (let i = 0; i < 8; i++) {
      const c = clients[i % 2];
      done.push(
        c.acquire({ name, ttlMs: '30000', waitTimeoutMs: '30000' }).then(async (grant) => {
          expect(grant.acquired).toBe(true);
          order.push(i);
          await c.release({ name, token: grant.token });
        }),
      );
      await waitFor(`waiter ${i} to queue`, async () => (await waiters(name)) === i + 1);
      await new Promise((r) => setTimeout(r, 30)); // arrivals 30 ms apart, as the issue asks
    }
    await clients[1].release({ name, token: holder.token });
    await Promise.all(done);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('never lets a try-once newcomer barge ahead of queued waiters, even at the instant of release', async () => {
    for (let attempt = 0; attempt < 10; attempt++) {
      const name = uniqueName();
      const holder = await clients[0].acquire({ name, ttlMs: '30000' });
      const queued = clients[1].acquire({ name, waitTimeoutMs: '30000' });
      await waitFor('the waiter to queue', async () => (await waiters(name)) === 1);
      const [, barging, laterBarging] = await Promise.all([
        clients[0].release({ name, token: holder.token }),
        clients[1].acquire({ name }),
        clients[0].acquire({ name }),
      ]);
      expect(barging.acquired).toBe(false);
      expect(laterBarging.acquired).toBe(false);
      expect((await queued).acquired).toBe(true);
    }
  });

  it('wakes a waiter on release with no poll interval (median release-to-grant under 50 ms)', async () => {
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const name = uniqueName();
      const holder = await clients[0].acquire({ name, ttlMs: '30000' });
      const waiting = clients[1].acquire({ name, waitTimeoutMs: '30000' });
      await waitFor('the waiter to queue', async () => (await waiters(name)) === 1);
      const releasedAt = performance.now();
      await clients[0].release({ name, token: holder.token });
      expect((await waiting).acquired).toBe(true);
      latencies.push(performance.now() - releasedAt);
    }
    expect(median(latencies)).toBeLessThan(50);
  });

  it('wakes a waiter when the holder’s lease expires, without a release', async () => {
    const name = uniqueName();
    await clients[0].acquire({ name, ttlMs: '300' });
    const startedAt = performance.now();
    const grant = await clients[1].acquire({ name, waitTimeoutMs: '10000' });
    expect(grant.acquired).toBe(true);
    expect(performance.now() - startedAt).toBeLessThan(2000);
  });

  it('leaves no orphaned grant when a waiter’s deadline races a release (50 rounds with jitter)', async () => {
    for (let round = 0; round < 50; round++) {
      const name = uniqueName();
      const holder = await clients[0].acquire({ name, ttlMs: '30000' });
      const waiterClient = clients[round % 2];
      const waiting = waiterClient.acquire({ name, ttlMs: '30000', waitTimeoutMs: '60000' }, 200).then(
        (grant) => grant,
        (err) => {
          expect(err.code).toBe(status.DEADLINE_EXCEEDED);
          return null;
        },
      );
      await new Promise((r) => setTimeout(r, 150 + Math.random() * 100));
      await clients[0].release({ name, token: holder.token });
      const grant = await waiting;
      if (grant?.acquired) await waiterClient.release({ name, token: grant.token });
      // An orphaned grant would hold for its 30 s lease; the third client needs it within 1 s.
      const third = await clients[(round + 1) % 2].acquire({ name, waitTimeoutMs: '1000' });
      expect(third.acquired, `round ${round}`).toBe(true);
    }
  });

  it('keeps serving the queue when a replica with queued waiters is killed', async () => {
    const name = uniqueName();
    const doomed = await startServerProcess(env.redis.url);
    const doomedClient = connect(doomed.addr);
    try {
      const holder = await clients[0].acquire({ name, ttlMs: '30000' });
      const lost = doomedClient.acquire({ name, waitTimeoutMs: '60000' }).catch(() => null);
      await waitFor('the doomed waiter to queue', async () => (await waiters(name)) === 1);
      const survivors = [clients[0], clients[1]].map((c) => c.acquire({ name, ttlMs: '30000', waitTimeoutMs: '30000' }));
      await waitFor('the survivors to queue', async () => (await waiters(name)) === 3);
      await doomed.stop('SIGKILL');
      const releasedAt = performance.now();
      await clients[0].release({ name, token: holder.token });
      const first = await Promise.race(survivors);
      expect(first.acquired).toBe(true);
      expect(performance.now() - releasedAt).toBeLessThan(8000);
      await lost;
    } finally {
      doomedClient.close();
      await doomed.stop('SIGKILL');
    }
  });
});
