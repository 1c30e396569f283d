// Engine tier, below the engine: the storage contract (src/engine/store.ts) on each store, with
// no engine and no gRPC. One Redis (src/redis/store.ts) and Redlock's majority over three
// independent masters (src/redlock/store.ts) answer the same named requests with the same named
// answers; what only a store with a queue does (queueing, claim, dequeue, hand-offs, the lock's
// refusals, request ids, values, scans) is checked on one Redis. Every key a call leaves has a TTL.
import { once } from 'node:events';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockError } from '../../src/engine/errors';
import { epochKey } from '../../src/engine/keys';
import type { AcquireRequest, LockRef, LockStore, ReleaseRequest } from '../../src/engine/store';
import { Mode } from '../../src/engine/types';
import { connectRedis } from '../../src/redis/connect';
import { RedisStore } from '../../src/redis/store';
import { RedlockStore } from '../../src/redlock/store';
import { startTestRedis, uniqueName, type TestRedis } from '../support/redis';
import { waitFor } from '../support/wait';

const PREFIX = 'hf';
let single: TestRedis;
let connections: ReturnType<typeof connectRedis>;
let redisStore: RedisStore;
let masters: TestRedis[] = [];
let redlockStore: RedlockStore;

beforeAll(async () => {
  [single, ...masters] = await Promise.all([0, 1, 2, 3].map(() => startTestRedis()));
  connections = connectRedis({ url: single.url });
  redisStore = new RedisStore(connections.commands, connections.subscriber);
  if (connections.commands.status !== 'ready') await once(connections.commands, 'ready');
  await redisStore.loadFunctions();
  redlockStore = new RedlockStore({ urls: masters.map((m) => m.url), nodeTimeoutMs: 500, quarantineMs: 2000, epochKey: epochKey(PREFIX) });
  await waitFor('a majority of voting masters', () => redlockStore.grantsBlocked() === null, 10_000);
});
afterAll(async () => {
  redlockStore?.close();
  await connections?.close();
  await Promise.all([single, ...masters].map((r) => r?.cleanup()));
});

const lockOf = (name: string): LockRef => ({ prefix: PREFIX, name });

function acquireRequest(lock: LockRef, token: string, extra: Partial<AcquireRequest> = {}): AcquireRequest {
  return {
    lock,
    token,
    owner: '',
    ttlMs: 5000,
    mode: Mode.EXCLUSIVE,
    limit: 1,
    requestId: '',
    waiterId: '',
    entryLeaseMs: 3000,
    holdId: '',
    maxWaiters: 0,
    value: '',
    ...extra,
  };
}

function releaseRequest(lock: LockRef, token: string, extra: Partial<ReleaseRequest> = {}): ReleaseRequest {
  return { lock, token, holdId: '', vanished: false, lockDelayMs: 0, handOffTo: '', why: '', ...extra };
}

/** Every key of the lock `name` on `redis` has a TTL (none lives forever). */
async function expectTtlOnEveryKey(redis: Redis, name: string): Promise<number> {
  const keys = await redis.keys(`${PREFIX}:{${name}}:*`);
  for (const key of keys) expect(await redis.pttl(key), key).toBeGreaterThan(0);
  return keys.length;
}

const stores = [
  { kind: 'one Redis', store: () => redisStore as LockStore, nodes: () => [single.client], releasedRenewal: 'expired' },
  // Redlock's masters remember a token given back with Release (redlock-release-3), so a renewal names it.
  { kind: 'Redlock', store: () => redlockStore as LockStore, nodes: () => masters.map((m) => m.client), releasedRenewal: 'hold_released' },
] as const;

describe.each(stores)('the contract on $kind', ({ store, nodes, releasedRenewal }) => {
  it('grants, refuses a second holder with a hint, renews, inspects, checks fences, releases once', async () => {
    const name = uniqueName('contract');
    const lock = lockOf(name);
    const first = await store().acquire(acquireRequest(lock, 't1', { owner: 'o1', holdId: 'h1' }));
    if (first.outcome !== 'granted') throw new Error(`not granted: ${JSON.stringify(first)}`);
    expect(first.confirmed).toBe(true);
    expect(first.grant).toMatchObject({ token: 't1', holdCount: 1 });
    expect(first.grant.fencingToken).toMatch(/^\d+$/);
    expect(first.grant.ttlMs).toBeGreaterThan(4800);
    expect(first.grant.ttlMs).toBeLessThanOrEqual(5000);

    const second = await store().acquire(acquireRequest(lock, 't2'));
    expect(second.outcome).toBe('not_granted');
    expect(second.outcome === 'not_granted' && second.nextExpiryMs).toBeGreaterThanOrEqual(0);

    const renewed = await store().renew({ lock, token: 't1', ttlMs: 8000, holdId: 'h1' });
    expect(renewed).toMatchObject({ renewed: true, confirmed: true });
    expect(renewed.renewed && renewed.leftMs).toBeGreaterThan(5000);

    const record = await store().inspect(lock);
    expect(record).toMatchObject({ fencingToken: first.grant.fencingToken, limit: 1, waiters: 0 });
    expect(record.holders).toEqual([expect.objectContaining({ owner: 'o1', fencingToken: first.grant.fencingToken, holdCount: 1, mode: Mode.EXCLUSIVE })]);
    expect(await store().checkFencingToken({ lock, fencingToken: first.grant.fencingToken })).toMatchObject({ live: true, mode: Mode.EXCLUSIVE });
    expect(await store().checkFencingToken({ lock, fencingToken: '1' })).toEqual({
      live: false,
      ttlMs: 0,
      mode: 0,
      latestFencingToken: first.grant.fencingToken,
    });
    for (const redis of nodes()) expect(await expectTtlOnEveryKey(redis, name)).toBeGreaterThan(0);

    expect(await store().release(releaseRequest(lock, 't1', { holdId: 'h1' }))).toEqual({
      held: true,
      freed: true,
      holdCount: 0,
      holdId: 'h1',
      handedOff: [],
      confirmed: true,
    });
    expect(await store().release(releaseRequest(lock, 't1'))).toEqual({ held: false });
    expect(await store().renew({ lock, token: 't1', ttlMs: 1000, holdId: 'h1' })).toEqual({ renewed: false, why: releasedRenewal });
    for (const redis of nodes()) await expectTtlOnEveryKey(redis, name);
  });

  it('renewMany answers every renewal in order: renewed, or not renewed and why', async () => {
    const [a, b, gone] = [uniqueName('many'), uniqueName('many'), uniqueName('many')].map(lockOf);
    for (const [lock, token] of [
      [a, 'ta'],
      [b, 'tb'],
    ] as const) {
      expect((await store().acquire(acquireRequest(lock, token, { holdId: `h-${token}`, ttlMs: 2000 }))).outcome).toBe('granted');
    }
    const answers = await store().renewMany([
      { lock: a, token: 'ta', ttlMs: 6000, holdId: 'h-ta' },
      { lock: gone, token: 'nobody', ttlMs: 6000, holdId: 'h' },
      { lock: b, token: 'tb', ttlMs: 7000, holdId: 'h-tb' },
    ]);
    expect(answers).toHaveLength(3);
    expect(answers[0]).toMatchObject({ renewed: true, confirmed: true });
    expect(answers[1]).toEqual({ renewed: false, why: 'expired' });
    expect(answers[2]).toMatchObject({ renewed: true, confirmed: true });
    expect((answers[2] as { leftMs: number }).leftMs).toBeGreaterThan((answers[0] as { leftMs: number }).leftMs);
  });

  it('a vanished holder keeps the lock closed: the next acquire is not granted', async () => {
    const lock = lockOf(uniqueName('vanished'));
    expect((await store().acquire(acquireRequest(lock, 'tv', { holdId: 'hv' }))).outcome).toBe('granted');
    const answer = await store().release(releaseRequest(lock, 'tv', { holdId: 'hv', vanished: true, vanishedLeaseMs: 5000, why: 'disconnected' }));
    expect(answer).toMatchObject({ held: true, holdId: 'hv' });
    expect((await store().acquire(acquireRequest(lock, 'tw'))).outcome).toBe('not_granted');
  });

  it("names each lock's channel and node under the lock's own hash tag", () => {
    const lock = lockOf('a{b}c');
    expect(store().channelOf(lock)).toMatch(/^hf:\{a%7Bb%7Dc\}:/);
    expect(store().nodeOf(lock)).toBe('');
  });
});

describe('one Redis: the queue, hand-offs and the refusals of the lock state', () => {
  const store = () => redisStore;

  it('queues a waiter, serves it through claim once the holder releases, and dequeue drops an entry', async () => {
    const name = uniqueName('queue');
    const lock = lockOf(name);
    expect((await store().acquire(acquireRequest(lock, 't1'))).outcome).toBe('granted');
    expect(await store().acquire(acquireRequest(lock, 't2', { waiterId: 'srv.w2', holdId: 'h2' }))).toMatchObject({ outcome: 'queued' });
    expect(await store().acquire(acquireRequest(lock, 't3', { waiterId: 'other.w3' }))).toMatchObject({ outcome: 'queued' });
    const waiting = await store().claim({ lock, entryLeaseMs: 3000, waiterIds: ['srv.w2', 'other.w3', 'nobody'] });
    expect(waiting.waiters).toEqual([{ outcome: 'queued' }, { outcome: 'queued' }, { outcome: 'gone' }]);
    expect(waiting.confirmed).toBe(true);
    expect((await store().inspect(lock)).waiters).toBe(2);

    // The release hands the lock to the releasing server's own waiter in its answer.
    const released = await store().release(releaseRequest(lock, 't1', { handOffTo: 'srv' }));
    if (!released.held) throw new Error('the release found nothing');
    expect(released.handedOff).toEqual([{ waiterId: 'srv.w2', holdId: 'h2', grant: expect.objectContaining({ token: 't2', holdCount: 1 }) }]);
    await store().dequeue({ lock, waiterId: 'other.w3' });
    expect((await store().claim({ lock, entryLeaseMs: 3000, waiterIds: ['other.w3'] })).waiters).toEqual([{ outcome: 'gone' }]);
    expect(await expectTtlOnEveryKey(single.client, name)).toBeGreaterThan(0);
  });

  it('answers the refusals of the lock state by name', async () => {
    const lock = lockOf(uniqueName('refusals'));
    expect((await store().acquire(acquireRequest(lock, 's1', { owner: 'reader', mode: Mode.SHARED, limit: 1 }))).outcome).toBe('granted');
    expect(await store().acquire(acquireRequest(lock, 'x', { limit: 2 }))).toEqual({ outcome: 'refused', refusal: { why: 'limit_mismatch', limit: 1 } });
    expect(await store().acquire(acquireRequest(lock, 'x', { owner: 'reader' }))).toEqual({ outcome: 'refused', refusal: { why: 'upgrade' } });
    expect(await store().acquire(acquireRequest(lock, 'w1', { waiterId: 'a.w1', maxWaiters: 1 }))).toMatchObject({ outcome: 'queued' });
    expect(await store().acquire(acquireRequest(lock, 'w2', { waiterId: 'a.w2', maxWaiters: 1 }))).toEqual({
      outcome: 'refused',
      refusal: { why: 'too_many_waiters', maxWaiters: 1 },
    });
    const other = lockOf(uniqueName('request-id'));
    expect((await store().acquire(acquireRequest(other, 'r1', { owner: 'a', requestId: 'rid-1' }))).outcome).toBe('granted');
    expect(await store().acquire(acquireRequest(other, 'r2', { owner: 'b', requestId: 'rid-1' }))).toEqual({
      outcome: 'refused',
      refusal: { why: 'request_id_reused' },
    });
  });

  it('ties request ids, sets values, renews with the fence, and lists locks by name prefix', async () => {
    const requestId = uniqueName('rid');
    const tie = { prefix: PREFIX, requestId, asked: 'one request', rememberMs: 60_000 };
    expect(await store().tieRequestId(tie)).toBe(true);
    expect(await store().tieRequestId(tie)).toBe(true);
    expect(await store().tieRequestId({ ...tie, asked: 'another request' })).toBe(false);

    const name = uniqueName('listed');
    const lock = lockOf(name);
    const granted = await store().acquire(acquireRequest(lock, 'tv'));
    if (granted.outcome !== 'granted') throw new Error('not granted');
    expect(await store().setValue({ lock, token: 'tv', value: 'v1' })).toEqual({ fencingToken: granted.grant.fencingToken });
    expect(await store().setValue({ lock, token: 'nobody', value: 'v2' })).toBeNull();
    expect((await store().inspect(lock)).holders[0].value).toBe('v1');
    expect(await store().renew({ lock, token: 'tv', ttlMs: 5000, withFence: true })).toMatchObject({ renewed: true, fencingToken: granted.grant.fencingToken });

    const names: string[] = [];
    let cursor = '0';
    do {
      const step = await store().scanLocks(PREFIX, cursor, 100, name);
      names.push(...step.names);
      cursor = step.cursor;
    } while (cursor !== '0');
    expect(names).toEqual([name]);
  });
});

describe('Redlock: what a majority vote cannot do is refused, not answered', () => {
  it('refuses request ids and values, and has no queue to claim from', async () => {
    const lock = lockOf(uniqueName('rl'));
    const conflict = (err: unknown) => err instanceof LockError && err.kind === 'conflict';
    const store: LockStore = redlockStore;
    expect(await store.tieRequestId({ prefix: PREFIX, requestId: 'r', asked: 'a', rememberMs: 1000 }).catch(conflict)).toBe(true);
    expect(await store.setValue({ lock, token: 't', value: 'v' }).catch(conflict)).toBe(true);
    expect(store.queues).toBe(false);
    await expect(store.claim({ lock, entryLeaseMs: 1000, waiterIds: ['w'] })).rejects.toThrow(/no queue/);
    expect(store.channelOf(lock)).toMatch(/:rc$/);
  });
});
