// The Lua scripts on a real redis-server, called directly (no engine, no server).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineScripts, readScript, scriptFiles, keyCount } from '../../src/engine/scripts';
import { lockKeys } from '../../src/engine/keys';
import { startTestRedis, uniqueName, type TestRedis } from '../support/redis';

let redis: TestRedis;
type Call = (...args: unknown[]) => Promise<any>;
const call = (script: string, name: string, n: number, ...args: unknown[]) => {
  const k = lockKeys('hf', name);
  const keys = [k.holders, k.queue, k.data, k.channel].slice(0, n);
  return ((redis.client as any)[`holdfast_${script}`] as Call).call(redis.client, ...keys, ...args);
};
const acquire = (name: string, token: string, o: { owner?: string; ttl?: number; mode?: number; limit?: number; rid?: string; waiter?: string } = {}) =>
  call('acquire', name, 4, token, o.owner ?? '', o.ttl ?? 10000, o.mode ?? 1, o.limit ?? 1, o.rid ?? '', o.waiter ?? '', 3000);
const release = (name: string, token: string, delay = 0) => call('release', name, 4, token, delay);

beforeAll(async () => {
  redis = await startTestRedis();
  defineScripts(redis.client);
});
afterAll(() => redis.cleanup());

describe('script files', () => {
  it('use exactly the KEYS their name declares, and every one has a header', () => {
    for (const file of scriptFiles().filter((f) => /-\d+$/.test(f))) {
      const source = readScript(file);
      const used = new Set([...source.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1])));
      expect(Math.max(...used), file).toBe(keyCount(file));
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
    expect(await release(name, 'tokA')).toEqual([1, 0]);
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
    expect(await release(name, 't1')).toEqual([0, 1]);
    expect((await acquire(name, 't3'))[0]).toBe(0);
    expect(await release(name, 't1')).toEqual([1, 0]);
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

  it('drops a served grant when its waiter is dequeued', async () => {
    const name = uniqueName();
    await acquire(name, 'holder');
    await acquire(name, 'tw1', { waiter: 'w1' });
    await release(name, 'holder');
    expect(await call('dequeue', name, 4, 'w1')).toBe(1);
    expect((await acquire(name, 'free'))[0]).toBe(1);
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
