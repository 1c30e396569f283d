// renew-batch-3 (many leases in one call) against renew-3 (one lease a call) on a real
// redis-server: the same states, built twice, renewed each way, must give the same answers, the
// same leases and keys that all keep a TTL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockKeys, scriptKeys } from '../../src/engine/keys';
import type { ScriptName } from '../../src/engine/scripts';
import { lockLibrary } from '../../src/redis/functions';
import { startTestRedis, uniqueName, type TestRedis } from '../support/redis';
import { waitFor } from '../support/wait';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startTestRedis();
  await lockLibrary().load(redis.client);
});
afterAll(() => redis.cleanup());

const PREFIX = 'hf';
const keysOf = (name: string, n: number) => scriptKeys(lockKeys(PREFIX, name), n);
const call = (script: ScriptName, keys: string[], args: (string | number)[]) => lockLibrary().call(redis.client, script, keys, args) as Promise<number[]>;
const acquire = (name: string, token: string, o: { ttl?: number; owner?: string; hold?: string } = {}) =>
  call('acquire', keysOf(name, 4), [token, o.owner ?? '', o.ttl ?? 10_000, 1, 1, '', '', 3000, o.hold ?? '']);
const release = (name: string, token: string, o: { hold?: string; vanished?: boolean; leaseMs?: number } = {}) =>
  call('release', keysOf(name, 4), [token, o.hold ?? '', o.vanished ? 1 : 0, 0, o.leaseMs ?? '', '', '']);
const leaseEnd = async (name: string, token: string) => Number(await redis.client.zscore(lockKeys(PREFIX, name).holders, token));
const redisNowMs = async () => {
  const [s, us] = await redis.client.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
};

interface Case {
  what: string;
  /** Builds the state on lock `name`; returns the renewal to ask for. */
  build(name: string): Promise<{ token: string; ttl: number; hold: string }>;
  /** renew-3's answer, as [code, value]; a value of 'kept' is a lease left that the renewal did not shorten. */
  expected: [number, number | 'kept'];
}

const CASES: Case[] = [
  {
    what: 'a live hold of a Hold stream',
    build: async (name) => (await acquire(name, 'tk', { ttl: 1000, hold: 'h1' }), { token: 'tk', ttl: 5000, hold: 'h1' }),
    expected: [1, 5000],
  },
  {
    what: 'a live grant whose lease already runs longer than asked (never shortened)',
    build: async (name) => (await acquire(name, 'tk', { ttl: 60_000 }), { token: 'tk', ttl: 1000, hold: '' }),
    expected: [1, 'kept'],
  },
  {
    what: 'ttl 0: the grant keeps its own lease length',
    build: async (name) => (await acquire(name, 'tk', { ttl: 7000 }), { token: 'tk', ttl: 0, hold: '' }),
    expected: [1, 7000],
  },
  {
    what: 'a hold released by its hold id while the grant lives on',
    build: async (name) => {
      await acquire(name, 'tk', { owner: 'o', hold: 'h1' });
      await acquire(name, 'tk2', { owner: 'o', hold: 'h2' }); // reentrant: the same grant
      await release(name, 'tk', { hold: 'h1' });
      return { token: 'tk', ttl: 5000, hold: 'h1' };
    },
    expected: [-1, 2],
  },
  {
    what: 'a grant released with its token',
    build: async (name) => (await acquire(name, 'tk'), await release(name, 'tk'), { token: 'tk', ttl: 5000, hold: '' }),
    expected: [-1, 0],
  },
  {
    what: 'a vanished hold, its lock closed until its lease ends',
    build: async (name) => (
      await acquire(name, 'tk', { hold: 'h1' }),
      await release(name, 'tk', { hold: 'h1', vanished: true, leaseMs: 5000 }),
      { token: 'tk', ttl: 5000, hold: 'h1' }
    ),
    expected: [-1, 0],
  },
  {
    what: 'an expired grant',
    build: async (name) => {
      await acquire(name, 'tk', { ttl: 30 });
      await untilRunOut(name, 'tk');
      return { token: 'tk', ttl: 5000, hold: '' };
    },
    expected: [-1, 0],
  },
  {
    what: 'a grant that expired, the lock taken by someone else since',
    build: async (name) => {
      await acquire(name, 'tk', { ttl: 30 });
      await untilRunOut(name, 'tk');
      expect((await acquire(name, 'thief', { ttl: 10_000 }))[0]).toBe(1);
      return { token: 'tk', ttl: 5000, hold: '' };
    },
    expected: [-1, 1],
  },
];

/** Until Redis's clock has passed the lease's end. */
async function untilRunOut(name: string, token: string): Promise<void> {
  const end = await leaseEnd(name, token);
  await waitFor('the lease to run out', async () => (await redisNowMs()) > end);
}

/** [code, value] with a value the renewal did not shorten (the lease end unchanged) written 'kept'. */
function outcome(reply: number[], endBefore: number, endAfter: number): [number, number | 'kept'] {
  const kept = reply[0] === 1 && endBefore > 0 && endAfter === endBefore;
  return [reply[0], kept ? 'kept' : reply[1]];
}

/** Every key of the lock has a TTL, and those of a live lease outlive it. */
async function expectTtls(name: string, leaseLeftMs: number | null): Promise<void> {
  for (const key of keysOf(name, 3)) {
    const ttl = await redis.client.pttl(key);
    expect(ttl === -2 || ttl > 0, `${key} has TTL ${ttl}`).toBe(true);
    if (leaseLeftMs !== null && ttl !== -2) expect(ttl).toBeGreaterThan(leaseLeftMs);
  }
}

describe('renew-batch-3 answers as renew-3 does', () => {
  it('on identical states, case by case, in one batch', async () => {
    const single = CASES.map(() => uniqueName());
    const batched = CASES.map(() => uniqueName());
    const asks = await Promise.all(CASES.map((c, i) => Promise.all([c.build(single[i]), c.build(batched[i])])));

    const singleOutcomes: [number, number | 'kept'][] = [];
    for (const [i, [ask]] of asks.entries()) {
      const before = await leaseEnd(single[i], ask.token);
      const reply = await call('renew', keysOf(single[i], 3), [ask.token, ask.ttl, ask.hold]);
      singleOutcomes.push(outcome(reply, before, await leaseEnd(single[i], ask.token)));
    }

    const befores = await Promise.all(asks.map(([, ask], i) => leaseEnd(batched[i], ask.token)));
    const keys = batched.flatMap((name) => keysOf(name, 3));
    const args = asks.flatMap(([, ask]) => [ask.token, ask.ttl, ask.hold]);
    const flat = await call('renewBatch', keys, args);
    expect(flat).toHaveLength(2 * CASES.length);
    const batchOutcomes = await Promise.all(
      asks.map(async ([, ask], i) => outcome(flat.slice(2 * i, 2 * i + 2), befores[i], await leaseEnd(batched[i], ask.token))),
    );

    const expected = CASES.map((c) => c.expected);
    expect(singleOutcomes).toEqual(expected);
    expect(batchOutcomes).toEqual(expected);
    for (const [i, name] of batched.entries()) await expectTtls(name, flat[2 * i] === 1 ? flat[2 * i + 1] : null);
  });

  it('renews holds of one grant in one batch in order (one Redis time), and refuses the one given back', async () => {
    const name = uniqueName();
    await acquire(name, 'tk', { owner: 'o', hold: 'h1', ttl: 1000 });
    await acquire(name, 'tk2', { owner: 'o', hold: 'h2', ttl: 1000 });
    await release(name, 'tk', { hold: 'h1' });
    const keys = [...keysOf(name, 3), ...keysOf(name, 3), ...keysOf(name, 3)];
    // The third sees the first's lease and does not shorten it.
    expect(await call('renewBatch', keys, ['tk', 4000, 'h2', 'tk', 9000, 'h1', 'tk', 2000, 'h2'])).toEqual([1, 4000, -1, 2, 1, 4000]);
  });

  it('extends the TTLs of keys that would otherwise end before the lease (every key keeps a TTL)', async () => {
    const name = uniqueName();
    await acquire(name, 'tk', { ttl: 1000 });
    const keys = keysOf(name, 3);
    for (const key of keys) await redis.client.pexpire(key, 500);
    expect(await call('renewBatch', keys, ['tk', 20_000, ''])).toEqual([1, 20_000]);
    await expectTtls(name, 20_000 + 60_000);
  });

  it('renews over a thousand leases in one call', async () => {
    const names = Array.from({ length: 1200 }, () => uniqueName());
    await Promise.all(names.map((name, i) => acquire(name, `t${i}`, { ttl: 1000 })));
    const flat = await call(
      'renewBatch',
      names.flatMap((name) => keysOf(name, 3)),
      names.flatMap((_, i) => [`t${i}`, 8000, '']),
    );
    expect(flat).toEqual(names.flatMap(() => [1, 8000]));
  });

  it('refuses keys and arguments that are not three per lease, naming the rule', async () => {
    const name = uniqueName();
    await expect(call('renewBatch', keysOf(name, 3), ['tk', 1000])).rejects.toThrow(/3 KEYS and 3 ARGV per lease/);
  });
});
