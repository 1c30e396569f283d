// Engine tier: redis-server SIGKILLed while locks are held and waiters wait, then started again
// on the same port without its data. What the engine reports: UNAVAILABLE in words (where Redis
// is and what is wrong, never ioredis's wording), kept leases lost with why, waits that go on
// and are granted once the restarted Redis's quarantine is over, fencing tokens still rising.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AcquireParams } from '../../src/engine/types';
import { keepHold, lockRequest, startEngine, useEngines, type TestEngine } from '../support/engine';
import { uniqueName, type TestRedis } from '../support/redis';
import { waitFor } from '../support/wait';

let redis: TestRedis;
let a: TestEngine;
let b: TestEngine;

// The server's default safety, scaled down: leases up to 3 s, so a Redis that may have lost
// grants gets no new grant for 3.5 s.
const MAX_TTL_MS = 3000;
const QUARANTINE_MS = MAX_TTL_MS + 500;
const SAFE = { maxTtlMs: MAX_TTL_MS, quarantineMarginMs: 500 };

const env = useEngines(2, SAFE);
beforeAll(() => void ([redis, a, b] = [env.redis, ...env.engines]));

afterEach(async () => {
  // Each test leaves Redis running and its quarantine over.
  if (redis.process.exitCode !== null || redis.process.signalCode !== null) await redis.startAgain();
  await a.engine.acquire(request(uniqueName('settle'), { waitMs: 20_000 }));
}, 30_000);

const request = (name: string, extra: Partial<AcquireParams> = {}) => lockRequest(name, 2000, extra);

/** What every call says while Redis is away: its address, and the cause in words. */
function unavailableInWords(port: number) {
  return {
    kind: 'unavailable',
    message: expect.stringMatching(
      new RegExp(`^(lock "[^"]+": )?Redis at 127\\.0\\.0\\.1:${port} is unavailable: (connection refused|the server is not connected)`),
    ),
  };
}

describe('redis-server killed and restarted empty', () => {
  it('every call is UNAVAILABLE in words while it is down; after the restart no grant until the quarantine is over', async () => {
    const name = uniqueName();
    const before = (await a.engine.acquire(request(name)))!;
    await redis.kill('SIGKILL');
    await expect(a.engine.acquire(request(uniqueName()))).rejects.toMatchObject(unavailableInWords(redis.port));
    await expect(a.engine.release(name, before.token)).rejects.toMatchObject(unavailableInWords(redis.port));
    await expect(a.engine.renew(name, before.token, 1000)).rejects.toMatchObject(unavailableInWords(redis.port));
    await expect(b.engine.inspect(name)).rejects.toMatchObject(unavailableInWords(redis.port));
    const errors = await Promise.allSettled([a.engine.acquire(request(name)), b.engine.checkFencingToken(name, before.fencingToken)]);
    for (const e of errors)
      expect(String((e as PromiseRejectedResult).reason?.message)).not.toMatch(/Connection is closed|enableOfflineQueue|Stream isn't writeable/);

    await redis.startAgain();
    const restartedAt = performance.now();
    // A try-once call is told why it is refused; a waiting one is granted once grants resume.
    await expect(a.engine.acquire(request(name))).rejects.toMatchObject({ kind: 'unavailable' });
    // While the engine is still reconnecting, a grant is UNAVAILABLE at once (Redis away): ask again.
    const after = await waitFor(
      'a waiting grant after the restart',
      () =>
        b.engine.acquire(request(name, { waitMs: 20_000 })).catch((err: { kind?: string }) => (err.kind === 'unavailable' ? undefined : Promise.reject(err))),
      30_000,
      50,
    );
    expect(after).not.toBeNull();
    expect(performance.now() - restartedAt).toBeGreaterThanOrEqual(QUARANTINE_MS - 500);
    // The lock's state is gone with Redis's data, yet its fencing token did not step back.
    expect(BigInt(after!.fencingToken)).toBeGreaterThan(BigInt(before.fencingToken));
  });

  it('without the quarantine the restarted Redis grants at once (negative control of the wait above)', async () => {
    const unsafe = await startEngine(redis, { maxTtlMs: MAX_TTL_MS });
    try {
      await redis.restart('SIGKILL');
      const name = uniqueName();
      const resumesIn = async (engine: TestEngine) => (await engine.engine.inspect(name)).grantsResumeInMs;
      // Once reconnected, the engine with the default safety says how long until it grants again.
      await waitFor('the quarantine', () =>
        resumesIn(a).then(
          (ms) => ms > 0,
          () => false,
        ),
      );
      await waitFor('the unsafe engine to reconnect', () =>
        resumesIn(unsafe).then(
          () => true,
          () => false,
        ),
      );
      expect(await resumesIn(unsafe)).toBe(0);
      expect(await unsafe.engine.acquire(request(name))).not.toBeNull();
      await expect(a.engine.acquire(request(uniqueName()))).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringContaining('restarted') });
    } finally {
      await unsafe.close();
    }
  });

  it('a kept lease is reported lost (backend_unavailable) before it could have run out; the waiter waits on and gets the lock after the restart', async () => {
    const name = uniqueName();
    const held = await keepHold(a, name, 1000);
    const waiter = b.engine.acquire(request(name, { waitMs: 20_000 }));
    waiter.catch(() => {});
    let granted = false;
    void waiter.then(() => (granted = true));
    await waitFor('the waiter to be queued', async () => (await b.engine.inspect(name)).waiters === 1);
    await redis.kill('SIGKILL');
    const lost = await held.lost;
    expect(lost).toMatchObject({ reason: 'backend_unavailable', message: expect.stringContaining('no renewal could be confirmed') });
    // Reported before the end of the lease last confirmed, not after it.
    expect(lost.at).toBeLessThan(held.confirmedUntil());
    expect(a.engine.stats().keptLeases).toBe(0);
    expect(granted).toBe(false); // the wait goes on through the outage: no error, no grant

    await redis.startAgain();
    const grant = await waiter;
    expect(grant).not.toBeNull();
    expect(BigInt(grant!.fencingToken)).toBeGreaterThan(BigInt(held.grant.fencingToken));
    expect(b.engine.stats().waiters).toBe(0);
  });

  it('a kept lease whose grant the restart lost is reported lost to the failover', async () => {
    const name = uniqueName();
    const held = await keepHold(a, name, MAX_TTL_MS);
    await redis.restart('SIGKILL');
    expect(await held.lost).toMatchObject({ reason: 'failover', message: expect.stringContaining('Redis failed over') });
  });
});
