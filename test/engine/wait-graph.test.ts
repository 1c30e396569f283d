// The store's wait graph (deadlock detection's storage: WaitGraph in src/engine/store.ts) on a
// real redis-server, through RedisStore and the lua/ functions, without the engine's walk.
import { beforeAll, describe, expect, it } from 'vitest';
import { waitsKey } from '../../src/engine/keys';
import type { AcquireRequest, LockRef } from '../../src/engine/store';
import type { RedisStore } from '../../src/redis/store';
import { useRedisStore } from '../support/engine';
import { uniqueName, type TestRedis } from '../support/redis';
import { waitFor } from '../support/wait';

const fixture = useRedisStore();
let redis: TestRedis;
let store: RedisStore;
beforeAll(() => {
  ({ redis, store } = fixture);
});

const lockRef = (name: string): LockRef => ({ prefix: 'hf', name });
const ask = (lock: LockRef, owner: string, waiterId = '', extra: Partial<AcquireRequest> = {}): AcquireRequest => ({
  lock,
  token: uniqueName('t'),
  owner,
  ttlMs: 30_000,
  mode: 1,
  limit: 1,
  requestId: '',
  waiterId,
  entryLeaseMs: 3000,
  holdId: '',
  maxWaiters: 0,
  value: '',
  ...extra,
});

describe('wait graph', () => {
  it('keeps an owner wait record with a TTL until it is forgotten, and drops one past its end', async () => {
    const owner = uniqueName('owner');
    const since = await store.noteWait({ prefix: 'hf', owner, waiterId: 'w1', name: 'L', waitedMs: 1000, keepMs: 20_000 });
    const time = await redis.client.time();
    expect(Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000) - since).toBeGreaterThanOrEqual(1000);
    expect(await redis.client.pttl(waitsKey('hf', owner))).toBeGreaterThan(15_000);
    expect(await store.waitsOf({ prefix: 'hf', owner })).toEqual([{ waiterId: 'w1', name: 'L', since }]);
    await store.forgetWait({ prefix: 'hf', owner, waiterId: 'w1' });
    expect(await store.waitsOf({ prefix: 'hf', owner })).toEqual([]);
    await store.noteWait({ prefix: 'hf', owner, waiterId: 'w2', name: 'L', waitedMs: 0, keepMs: 30 });
    await waitFor('the record to pass its end', async () => (await store.waitsOf({ prefix: 'hf', owner })).length === 0);
    expect(await redis.client.hlen(waitsKey('hf', owner))).toBe(0);
  });

  it("reads a waiter's edges on its lock: the live holders' owners without ''; none once the queue served it", async () => {
    const lock = lockRef(uniqueName('sem'));
    const [me, other] = [uniqueName('me'), uniqueName('other')];
    const sem = { limit: 2 };
    const held = await store.acquire(ask(lock, other, '', sem));
    const anonymous = await store.acquire(ask(lock, '', '', sem));
    const redisMs = async () => {
      const [s, us] = await redis.client.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    const before = await redisMs();
    expect((await store.acquire(ask(lock, me, 'srv.w1', sem))).outcome).toBe('queued');
    const after = await redisMs();
    const queued = await store.waitEdge({ lock, waiterId: 'srv.w1', owner: me });
    expect(queued).toMatchObject({ waiting: true, holders: [other] });
    // When it was queued, by Redis TIME: what picks the youngest wait of a cycle.
    expect(queued.queuedAt).toBeGreaterThanOrEqual(before);
    expect(queued.queuedAt).toBeLessThanOrEqual(after);
    if (held.outcome !== 'granted' || anonymous.outcome !== 'granted') throw new Error('not granted');
    await store.release({ lock, token: held.grant.token, holdId: '', vanished: false, lockDelayMs: 0, handOffTo: '', why: '' });
    expect(await store.waitEdge({ lock, waiterId: 'srv.w1', owner: me })).toEqual({ waiting: false, queuedAt: 0, holders: [] });
  });

  it('ends a queued wait once: claim answers it aborted with the message, and the queue behind it is served', async () => {
    const lock = lockRef(uniqueName('rw'));
    const [holder, me, you] = [uniqueName('holder'), uniqueName('me'), uniqueName('you')];
    expect((await store.acquire(ask(lock, holder, '', { mode: 2 }))).outcome).toBe('granted');
    expect((await store.acquire(ask(lock, me, 'srv.w1', { mode: 1 }))).outcome).toBe('queued');
    // Shared, but behind an exclusive waiter: it waits (no barging).
    expect((await store.acquire(ask(lock, you, 'srv.w2', { mode: 2 }))).outcome).toBe('queued');
    expect(await store.abortWait({ lock, waiterId: 'srv.w1', message: 'deadlock: test' })).toBe(true);
    expect(await store.abortWait({ lock, waiterId: 'srv.w1', message: 'deadlock: test' })).toBe(false);
    const claimed = await store.claim({ lock, entryLeaseMs: 3000, waiterIds: ['srv.w1', 'srv.w2'] });
    expect(claimed.waiters[0]).toEqual({ outcome: 'aborted', message: 'deadlock: test' });
    expect(claimed.waiters[1].outcome).toBe('granted');
    expect(await store.abortWait({ lock, waiterId: 'srv.w2', message: 'deadlock: test' })).toBe(false);
    expect((await store.inspect(lock)).waiters).toBe(0);
  });
});
