// The Lua scripts on a real redis-server, called directly (no engine, no server).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptName } from '../../src/engine/scripts';
import { readScript, scriptFiles, keyCount } from '../../src/redis/scripts';
import { lockLibrary } from '../../src/redis/functions';
import { lockKeys } from '../../src/engine/keys';
import { startTestRedis, uniqueName, type TestRedis } from '../support/redis';

let redis: TestRedis;
const call = (script: string, name: string, n: number, ...args: unknown[]) => {
  const k = lockKeys('hf', name);
  const keys = [k.holders, k.queue, k.data, k.channel].slice(0, n);
  // biome-ignore lint/suspicious/noExplicitAny: a Lua reply is nested arrays whose shape each test asserts by indexing into it
  return lockLibrary().call(redis.client, script as ScriptName, keys, args as (string | number)[]) as Promise<any>;
};
type AcquireArgs = { owner?: string; ttl?: number; mode?: number; limit?: number; rid?: string; waiter?: string; hold?: string; maxWaiters?: number };
const acquire = (name: string, token: string, o: AcquireArgs = {}) =>
  call(
    'acquire',
    name,
    4,
    token,
    o.owner ?? '',
    o.ttl ?? 10000,
    o.mode ?? 1,
    o.limit ?? 1,
    o.rid ?? '',
    o.waiter ?? '',
    3000,
    o.hold ?? '',
    ...(o.maxWaiters === undefined ? [] : [o.maxWaiters]),
  );
const release = (name: string, token: string, o: { hold?: string; vanished?: boolean; delay?: number } = {}) =>
  call('release', name, 4, token, o.hold ?? '', o.vanished ? 1 : 0, o.delay ?? 0);
const renew = (name: string, token: string, ttl: number, hold = '') => call('renew', name, 3, token, ttl, hold);

beforeAll(async () => {
  redis = await startTestRedis();
  await lockLibrary().load(redis.client);
});
afterAll(() => redis.cleanup());

describe('script files', () => {
  it('use exactly the KEYS their name declares, and every one has a header', () => {
    for (const file of scriptFiles().filter((f) => /-\d+$/.test(f))) {
      const source = readScript(file);
      const used = new Set([...source.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1])));
      // A batch over many locks reads its keys by computed index, N per lease.
      if (used.size === 0) expect(source, file).toContain(`KEYS[1..]   ${keyCount(file)} per lease`);
      else expect(Math.max(...used), file).toBe(keyCount(file));
      expect(source.startsWith('--[['), file).toBe(true);
      expect(source, file).toMatch(/Returns/);
      expect(source, file).not.toMatch(/^--- @include/m);
    }
  });
});

describe('acquire and release', () => {
  it('grants once, refuses a second caller, and frees on release', async () => {
    const name = uniqueName();
    const first = await acquire(name, 'tokA');
    expect(first[0]).toBe(1);
    expect(first[1]).toBe('tokA');
    expect(await acquire(name, 'tokB')).toEqual([0, expect.any(Number)]);
    expect(await release(name, 'tokB')).toEqual([-1]);
    expect(await release(name, 'tokA')).toEqual([1, 0, '']);
    expect((await acquire(name, 'tokB'))[0]).toBe(1);
  });

  it('gives every key a TTL and keeps all keys in one slot', async () => {
    const name = uniqueName('{weird}name');
    await acquire(name, 'tokA', { waiter: '' });
    await acquire(name, 'tokB', { waiter: 'w1' });
    const keys = await redis.client.keys(`hf:*${name.slice(-12)}*`);
    expect(keys.length).toBe(3);
    for (const key of keys) expect(await redis.client.pttl(key)).toBeGreaterThan(0);
    // The tag Redis Cluster hashes is from the first '{' to the next '}': it must be the whole
    // name (braces encoded), not a piece that unrelated names could share.
    const tags = new Set(keys.map((k) => k.slice(k.indexOf('{'), k.indexOf('}', k.indexOf('{')) + 1)));
    expect([...tags]).toEqual([`{${name.replace(/[{}]/g, (c) => (c === '{' ? '%7B' : '%7D'))}}`]);
  });

  it('re-enters for the same owner and frees only at hold count 0', async () => {
    const name = uniqueName();
    const a = await acquire(name, 't1', { owner: 'svc-a' });
    const b = await acquire(name, 't2', { owner: 'svc-a' });
    expect(b[1]).toBe('t1');
    expect(b[2]).toBe(a[2]);
    expect(b[4]).toBe(2);
    expect(await release(name, 't1')).toEqual([0, 1, '']);
    expect((await acquire(name, 't3'))[0]).toBe(0);
    expect(await release(name, 't1')).toEqual([1, 0, '']);
  });

  it('fencing tokens increase strictly, also after the keys expired', async () => {
    const name = uniqueName();
    const fences: bigint[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await acquire(name, `t${i}`);
      fences.push(BigInt(r[2]));
      await release(name, `t${i}`);
    }
    const k = lockKeys('hf', name);
    await redis.client.del(k.holders, k.queue, k.data); // as if idle long enough to expire
    fences.push(BigInt((await acquire(name, 'late'))[2]));
    for (let i = 1; i < fences.length; i++) expect(fences[i] > fences[i - 1]).toBe(true);
  });

  it('refuses a limit that differs from the lock’s, and an upgrade', async () => {
    const name = uniqueName();
    await acquire(name, 's1', { limit: 3 });
    expect(await acquire(name, 's2', { limit: 2 })).toEqual([-3, 3]);
    const rw = uniqueName();
    await acquire(rw, 'r1', { owner: 'o', mode: 2 });
    expect(await acquire(rw, 'r2', { owner: 'o', mode: 1 })).toEqual([-4]);
  });

  it('queues in FIFO order and serves the head on release, publishing once', async () => {
    const name = uniqueName();
    await acquire(name, 'holder');
    expect((await acquire(name, 'tw1', { waiter: 'w1' }))[0]).toBe(2);
    expect((await acquire(name, 'tw2', { waiter: 'w2' }))[0]).toBe(2);
    // no barging: a try-once caller is refused while others queue
    await release(name, 'holder');
    expect((await acquire(name, 'late'))[0]).toBe(0);
    const claimed = await call('claim', name, 4, 3000, 'w1', 'w2');
    expect(claimed[1][0][0]).toBe(1);
    expect(claimed[1][0][1]).toBe('tw1');
    expect(claimed[1][1]).toEqual([2]);
  });

  it('queues no one past max waiters (ARGV[10]), while a try-once caller and a re-entering owner are answered as before', async () => {
    const name = uniqueName();
    expect((await acquire(name, 'holder', { owner: 'o' }))[0]).toBe(1);
    expect((await acquire(name, 't1', { waiter: 'w1', maxWaiters: 2 }))[0]).toBe(2);
    expect((await acquire(name, 't2', { waiter: 'w2', maxWaiters: 2 }))[0]).toBe(2);
    expect(await acquire(name, 't3', { waiter: 'w3', maxWaiters: 2 })).toEqual([-6, 2]);
    expect((await acquire(name, 't4', { maxWaiters: 2 }))[0]).toBe(0);
    expect((await acquire(name, 't5', { owner: 'o', maxWaiters: 2 }))[0]).toBe(1);
    expect((await acquire(name, 't6', { waiter: 'w6', maxWaiters: 0 }))[0]).toBe(2); // 0: no cap
    expect(await redis.client.zcard(lockKeys('hf', name).queue)).toBe(3);
  });

  it('drops a served grant when its waiter is dequeued', async () => {
    const name = uniqueName();
    await acquire(name, 'holder');
    await acquire(name, 'tw1', { waiter: 'w1' });
    await release(name, 'holder');
    expect(await call('dequeue', name, 4, 'w1')).toBe(1);
    expect((await acquire(name, 'free'))[0]).toBe(1);
  });

  it('gives back each named hold once: by its id, or the newest when no unnamed hold is left', async () => {
    const name = uniqueName();
    await acquire(name, 't1', { owner: 'o', hold: 'holdA' });
    await acquire(name, 't2', { owner: 'o', hold: 'holdB' });
    await acquire(name, 't3', { owner: 'o' });
    // No id: the unnamed hold (taken by Acquire) goes first, then the newest stream's.
    expect(await release(name, 't1')).toEqual([0, 2, '']);
    expect(await release(name, 't1')).toEqual([0, 1, 'holdB']);
    // holdB is gone: its renewal says so, and its own end gives back nothing more.
    expect(await renew(name, 't1', 1000, 'holdB')).toEqual([-1, 2]);
    expect(await release(name, 't1', { hold: 'holdB' })).toEqual([-1]);
    expect((await acquire(name, 'other'))[0]).toBe(0);
    expect(await release(name, 't1', { hold: 'holdA' })).toEqual([1, 0, 'holdA']);
    expect((await acquire(name, 'other'))[0]).toBe(1);
  });

  it("keeps a vanished holder's lock closed until its lease has run out, plus the lock delay", async () => {
    const name = uniqueName();
    await acquire(name, 't1', { ttl: 200, hold: 'h1' });
    expect(await release(name, 't1', { hold: 'h1', vanished: true, delay: 300 })).toEqual([1, 0, 'h1']);
    const [holder] = (await call('inspect', name, 3)).slice(3);
    expect(holder[3]).toBe(0); // abandoned: no holds, but closed
    expect(holder[2]).toBeGreaterThan(300);
    expect((await acquire(name, 't2'))[0]).toBe(0);
    expect(await renew(name, 't1', 1000, 'h1')).toEqual([-1, 0]);
    // The same owner cannot slip back in either: the vanished client is not this one.
    expect((await acquire(name, 't3', { waiter: 'w' }))[0]).toBe(2);
  });

  it('a vanished hold keeps the lock closed even when another hold of the grant is released first', async () => {
    const name = uniqueName();
    await acquire(name, 't1', { owner: 'o', ttl: 5000, hold: 'h1' });
    await acquire(name, 't1b', { owner: 'o', ttl: 5000, hold: 'h2' });
    expect(await release(name, 't1', { hold: 'h1', vanished: true })).toEqual([0, 1, 'h1']);
    expect(await release(name, 't1', { hold: 'h2' })).toEqual([1, 0, 'h2']);
    expect((await acquire(name, 't2'))[0]).toBe(0);
    const [holder] = (await call('inspect', name, 3)).slice(3);
    expect(holder[2]).toBeGreaterThan(4000);
  });

  it('a vanished holder keeps its mode: exclusive shuts out readers, shared admits readers but not writers', async () => {
    const exclusive = uniqueName();
    await acquire(exclusive, 'w', { ttl: 5000, hold: 'hw' });
    await release(exclusive, 'w', { hold: 'hw', vanished: true });
    expect((await acquire(exclusive, 'r', { mode: 2 }))[0]).toBe(0);
    expect((await call('inspect', exclusive, 3))[3][4]).toBe(1);
    const shared = uniqueName();
    await acquire(shared, 'r1', { ttl: 5000, mode: 2, hold: 'hr' });
    await release(shared, 'r1', { hold: 'hr', vanished: true });
    expect((await acquire(shared, 'r2', { mode: 2 }))[0]).toBe(1);
    expect((await acquire(shared, 'w2'))[0]).toBe(0);
  });

  it('renewal never shortens a lease', async () => {
    const name = uniqueName();
    await acquire(name, 't1', { ttl: 10000 });
    const [code, left] = await renew(name, 't1', 100);
    expect(code).toBe(1);
    expect(left).toBeGreaterThan(9000);
    expect((await renew(name, 't1', 20000))[1]).toBe(20000);
  });

  it('replays a request id only for the same owner and parameters', async () => {
    const name = uniqueName();
    const rid = 'r-0123456789abcdef';
    const first = await acquire(name, 'tA', { owner: 'alice', rid });
    expect(first[0]).toBe(1);
    const again = await acquire(name, 'tX', { owner: 'alice', rid });
    expect(again.slice(0, 3)).toEqual(first.slice(0, 3));
    expect(again[4]).toBe(1); // counted once
    expect(await acquire(name, 'tM', { owner: 'mallory', rid, mode: 2 })).toEqual([-5]);
    expect(await acquire(name, 'tM', { owner: 'alice', rid, ttl: 9999 })).toEqual([-5]);
    expect(await acquire(name, 'tM', { owner: 'alice', rid, mode: 2 })).toEqual([-5]);
  });

  it('ties a request id to one request across locks', async () => {
    const key = `hf:rid:{${uniqueName()}}`;
    const tie = (asked: string) => lockLibrary().call(redis.client, 'requestId', [key], [asked, 5000]);
    expect(await tie('["a","alice",1,1,1000]')).toBe(1);
    expect(await tie('["a","alice",1,1,1000]')).toBe(1);
    expect(await tie('["b","alice",1,1,1000]')).toBe(0);
    expect(await redis.client.pttl(key)).toBeGreaterThan(0);
  });

  it('inspects holders and waiters without tokens', async () => {
    const name = uniqueName();
    await acquire(name, 'secret-token', { owner: 'me' });
    await acquire(name, 'secret-2', { waiter: 'w' });
    const info = await call('inspect', name, 3);
    expect(JSON.stringify(info)).not.toContain('secret');
    expect(info[2]).toBe(1);
    expect(info[3][0]).toBe('me');
  });
});
