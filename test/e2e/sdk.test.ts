// The TypeScript SDK (clients/ts) against real holdfast server processes on a real redis-server,
// over each transport (a unary call per operation, or one Session stream per client).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient, LeaseLostError, LostReason, NotAcquiredError, type Lease } from '../../clients/ts/index';
import { lockKeys } from '../../src/engine/keys';
import { useServers } from '../support/fixture';
import { deleteLockState, uniqueName, type TestRedis } from '../support/redis';
import { startServerProcess } from '../support/server';
import { abortReason } from '../support/abort';

const env = useServers(1);
let redis: TestRedis;

beforeAll(() => {
  redis = env.redis;
});

describe.each(['unary', 'session'] as const)('over transport %s', (transport) => {
  let client: HoldfastClient;
  let other: HoldfastClient;

  beforeAll(() => {
    client = new HoldfastClient(env.servers[0].addr, { transport });
    other = new HoldfastClient(env.servers[0].addr, { transport });
  });
  afterAll(() => {
    client?.close();
    other?.close();
  });

  describe('acquire', () => {
    it('grants a lock with a bigint fencing token, refuses it to others, and releases it', async () => {
      const name = uniqueName();
      const lock = await client.acquire(name, { ttlMs: 10_000, owner: 'sdk' });
      expect(lock).toMatchObject({ name, ttlMs: 10_000, holdCount: 1 });
      expect(lock.expiresAt).toBeGreaterThan(Date.now());
      expect(lock.expiresAt).toBeLessThan(Date.now() + 10_000);
      expect(lock.fencingToken).toBeGreaterThan(0n);
      await expect(other.acquire(name, { waitMs: 100 })).rejects.toBeInstanceOf(NotAcquiredError);
      expect(await lock.renew(20_000)).toBe(20_000);
      expect(lock.expiresAt).toBeGreaterThan(Date.now() + 10_000);
      expect(lock.expiresAt).toBeLessThan(Date.now() + 20_000);
      const info = await other.inspect(name);
      expect(info).toMatchObject({ name, waiters: 0, fencingToken: lock.fencingToken, limit: 1 });
      expect(info.holders).toEqual([{ owner: 'sdk', mode: 'exclusive', fencingToken: lock.fencingToken, ttlMs: expect.any(Number), holdCount: 1, value: '' }]);
      expect(await lock.release()).toEqual({ released: true, holdCount: 0 });
      expect((await other.inspect(name)).holders).toEqual([]);
      const next = await other.acquire(name);
      expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
      expect(await other.checkFencingToken(name, next.fencingToken)).toMatchObject({ live: true, latestFencingToken: next.fencingToken });
    });

    it('counts a waited-for grant from the request’s send time plus the wait the server reports, never past the lease in Redis', async () => {
      const name = uniqueName();
      await other.acquire(name, { ttlMs: 1500 }); // not released: the waiter gets the lock when this lease ends
      const sentBy = Date.now();
      const lock = await client.acquire(name, { ttlMs: 1000, waitMs: 10_000 });
      const answeredAt = Date.now();
      expect(answeredAt - sentBy).toBeGreaterThanOrEqual(1000); // waited longer than its own ttl
      // The wait the server reports keeps the lease usable: counted from the send time alone, it
      // would already be over.
      expect(lock.expiresAt).toBeGreaterThan(answeredAt);
      // And never later than Redis's own end of the lease.
      const [holder] = (await other.inspect(name)).holders;
      expect(lock.expiresAt).toBeLessThanOrEqual(Date.now() + holder.ttlMs + 5);
    });

    it('NotAcquiredError names the lock and the wait', async () => {
      const name = uniqueName();
      await client.acquire(name);
      const err = await other.acquire(name, { waitMs: 150 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NotAcquiredError);
      expect(err).toMatchObject({ lockName: name, waitMs: 150, message: expect.stringContaining(name) });
    });

    it('passes server errors through as ServiceErrors', async () => {
      await expect(client.acquire(uniqueName(), { ttlMs: 5 })).rejects.toMatchObject({ code: 3, details: expect.stringContaining('ttl_ms') });
      await expect(client.acquire(uniqueName(), { ttlMs: 1.5 })).rejects.toThrow(RangeError);
    });
  });

  describe('withLock', () => {
    it('runs the callback under the lock, returns its value and releases', async () => {
      const name = uniqueName();
      const value = await client.withLock(
        name,
        async (lease) => {
          expect(lease.fencingToken).toBeGreaterThan(0n);
          expect(lease.expiresAt).toBeGreaterThan(Date.now());
          expect(lease.expiresAt).toBeLessThanOrEqual(Date.now() + 5_000);
          expect((await other.inspect(name)).holders).toHaveLength(1);
          await expect(other.acquire(name)).rejects.toBeInstanceOf(NotAcquiredError);
          return 42;
        },
        { ttlMs: 5_000 },
      );
      expect(value).toBe(42);
      expect((await other.inspect(name)).holders).toEqual([]);
    });

    it('releases when the callback throws, and rethrows its error', async () => {
      const name = uniqueName();
      const boom = new Error('boom');
      let signal: AbortSignal | undefined;
      await expect(
        client.withLock(name, (lease) => {
          signal = lease.signal;
          throw boom;
        }),
      ).rejects.toBe(boom);
      expect(signal?.aborted).toBe(false); // a release is not a loss
      expect((await other.inspect(name)).holders).toEqual([]);
      await other.acquire(name); // free again
    });

    it('keeps the lease past its ttl while the callback runs', async () => {
      const name = uniqueName();
      await client.withLock(
        name,
        async (lease) => {
          const firstExpiry = lease.expiresAt;
          await new Promise((resolve) => setTimeout(resolve, 2 * lease.ttlMs)); // the duration is what is tested
          expect(lease.signal.aborted).toBe(false);
          expect(lease.expiresAt).toBeGreaterThan(firstExpiry + lease.ttlMs);
          await expect(other.acquire(name)).rejects.toBeInstanceOf(NotAcquiredError);
        },
        { ttlMs: 1_500 },
      );
    });

    it('serialises concurrent callers', async () => {
      const name = uniqueName();
      let inside = 0;
      let most = 0;
      await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? client : other).withLock(
            name,
            async () => {
              most = Math.max(most, ++inside);
              await new Promise((resolve) => setImmediate(resolve));
              inside--;
            },
            { waitMs: 20_000 },
          ),
        ),
      );
      expect(most).toBe(1);
    });

    it('aborts the signal when the grant is deleted behind its back', async () => {
      const name = uniqueName();
      const reason = await client.withLock(
        name,
        async (lease) => {
          await deleteLockState(redis, name);
          return abortReason<LeaseLostError>(lease.signal);
        },
        { ttlMs: 1_500 },
      );
      expect(reason).toBeInstanceOf(LeaseLostError);
      expect(reason).toMatchObject({ lockName: name, source: 'server' });
      expect([LostReason.LOST_REASON_EXPIRED, LostReason.LOST_REASON_TAKEN]).toContain(reason.code);
    });

    it('throws NotAcquiredError when the lock stays taken', async () => {
      const name = uniqueName();
      await other.acquire(name, { ttlMs: 10_000 });
      let ran = false;
      await expect(client.withLock(name, () => (ran = true), { waitMs: 200 })).rejects.toBeInstanceOf(NotAcquiredError);
      expect(ran).toBe(false);
    });

    it('stops waiting when its signal aborts', async () => {
      const name = uniqueName();
      await other.acquire(name, { ttlMs: 10_000 });
      const stop = new AbortController();
      const waiting = client.withLock(name, () => 'ran', { waitMs: 20_000, signal: stop.signal });
      await expect.poll(async () => (await other.inspect(name)).waiters, { timeout: 10_000 }).toBe(1);
      stop.abort(new Error('stopped'));
      await expect(waiting).rejects.toThrow('stopped');
      await expect.poll(async () => (await other.inspect(name)).waiters, { timeout: 10_000 }).toBe(0);
    });
  });

  describe('the local deadline', () => {
    it('aborts before the lease can end in Redis when the server goes silent', async () => {
      const silent = await startServerProcess(redis.url);
      const silentClient = new HoldfastClient(silent.addr, { transport });
      const name = uniqueName();
      try {
        let lease: Lease | undefined;
        const reason = await silentClient.withLock(
          name,
          async (held) => {
            lease = held;
            process.kill(silent.pid, 'SIGSTOP'); // no renewals, no lost event, no stream end
            const why = await abortReason<LeaseLostError>(held.signal);
            // The local deadline is no later than the lease's end in Redis (both wall clocks of this machine).
            const expiry = Number(await redis.client.zscore(lockKeys('hf', name).holders, held.token));
            expect(held.expiresAt).toBeLessThanOrEqual(expiry);
            return why;
          },
          { ttlMs: 1_500 },
        );
        expect(reason).toMatchObject({ source: 'deadline', lockName: name });
        expect(lease?.signal.aborted).toBe(true);
      } finally {
        process.kill(silent.pid, 'SIGCONT');
        silentClient.close();
        await silent.stop();
      }
    });
  });
});
