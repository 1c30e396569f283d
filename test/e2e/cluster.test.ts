// holdfast on a real three-master Redis Cluster: every lock kind, waiting with sharded pub/sub
// wake-ups, and Hold renewals batched per node, for lock names spread over all nodes.
import calculateSlot from 'cluster-key-slot';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient, NotAcquiredError } from '../../clients/ts/index';
import { LockMode } from '../../gen/holdfast/v1/lock';
import { lockKeys } from '../../src/engine/keys';
import { connect, type TestClient } from '../support/client';
import { openSession } from '../support/session';
import { collect } from '../support/collect';
import { startTestCluster, type TestCluster } from '../support/cluster';
import { uniqueName } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

let cluster: TestCluster;
let replicas: ServerProcess[];
let a: TestClient;
let b: TestClient;

beforeAll(async () => {
  cluster = await startTestCluster();
  const seeds = cluster.nodes.join(',');
  replicas = await Promise.all([startServerProcess(undefined, ['--redis-cluster', seeds]), startServerProcess(undefined, ['--redis-cluster', seeds])]);
  [a, b] = replicas.map((r) => connect(r.addr));
}, 60_000);
afterAll(async () => {
  a?.close();
  b?.close();
  await Promise.all((replicas ?? []).map((r) => r.stop()));
  await cluster?.cleanup();
});

/** Names whose keys land on every master, so each test crosses nodes. */
function namesOnEveryNode(count: number): string[] {
  const names: string[] = [];
  const perThird = [0, 0, 0];
  while (names.length < count) {
    const name = uniqueName('cl');
    const third = Math.floor(calculateSlot(lockKeys('hf', name).holders) / 5462);
    if (perThird[third] < Math.ceil(count / 3)) {
      perThird[third]++;
      names.push(name);
    }
  }
  return names;
}

/** `pairs` pairs of names whose keys share a slot (different hash tags, one slot: CRC16 collisions). */
function namesSharingSlots(pairs: number): string[] {
  const bySlot = new Map<number, string>();
  const names: string[] = [];
  while (names.length < 2 * pairs) {
    const name = uniqueName('cl');
    const slot = calculateSlot(lockKeys('hf', name).holders);
    const other = bySlot.get(slot);
    if (other === undefined) bySlot.set(slot, name);
    else if (other !== '') {
      names.push(other, name);
      bySlot.set(slot, '');
    }
  }
  return names;
}

describe('on a Redis Cluster', () => {
  it('keeps all keys of a lock in one slot, each with a TTL', async () => {
    const name = uniqueName('{tag}');
    await a.acquire({ name, ttlMs: '30000' });
    await a.acquire({ name, waitTimeoutMs: '100' });
    const keys = lockKeys('hf', name);
    expect(new Set([keys.holders, keys.queue, keys.data, keys.channel].map((k) => calculateSlot(k))).size).toBe(1);
    const client = new Cluster(cluster.nodes.map((n) => ({ host: '127.0.0.1', port: Number(n.split(':')[1]) })));
    try {
      expect(await client.pttl(keys.holders)).toBeGreaterThan(0);
      expect(await client.pttl(keys.data)).toBeGreaterThan(0);
    } finally {
      client.disconnect();
    }
  });

  it('grants, refuses, hands off and releases exclusive, shared and semaphore locks on every node', async () => {
    for (const name of namesOnEveryNode(6)) {
      const grant = await a.acquire({ name, ttlMs: '30000' });
      expect(grant.acquired).toBe(true);
      expect((await b.acquire({ name })).acquired).toBe(false);
      const waiting = b.acquire({ name, waitTimeoutMs: '10000' });
      await waitFor('the waiter', async () => (await a.inspect({ name })).waiters === 1);
      await a.release({ name, token: grant.token });
      const next = await waiting; // woken by a sharded publish on the lock's node
      expect(next.acquired).toBe(true);
      expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(grant.fencingToken));
      await b.release({ name, token: next.token });

      const shared = await Promise.all([a, b].map((c) => c.acquire({ name, mode: LockMode.LOCK_MODE_SHARED })));
      expect(shared.every((s) => s.acquired)).toBe(true);
      await Promise.all(shared.map((s) => a.release({ name, token: s.token })));

      const sem = `${name}-sem`;
      const permits = await Promise.all([a, b, a].map((c) => c.acquire({ name: sem, limit: 2 })));
      expect(permits.filter((p) => p.acquired)).toHaveLength(2);
    }
  });

  it('a watcher on one server sees grants and releases made through the other, for names on every node', async () => {
    const sdkB = new HoldfastClient(replicas[1].addr);
    const stop = new AbortController();
    try {
      for (const name of namesOnEveryNode(3)) {
        const changes = collect(sdkB.watch(name, { signal: stop.signal }));
        await changes.next((c) => c.event === 'state');
        const grant = await a.acquire({ name, ttlMs: '30000', value: 'on-a' });
        const granted = await changes.next((c) => c.event === 'granted');
        expect(granted.holder).toMatchObject({ value: 'on-a', fencingToken: BigInt(grant.fencingToken) });
        await a.release({ name, token: grant.token });
        await changes.next((c) => c.event === 'released');
      }
    } finally {
      stop.abort();
      sdkB.close();
    }
  });

  it('takes a set of names on different nodes all or nothing, one script per slot, and rolls back a partial grant', async () => {
    const sdkA = new HoldfastClient(replicas[0].addr);
    const sdkB = new HoldfastClient(replicas[1].addr);
    try {
      const names = namesOnEveryNode(3);
      expect(new Set(names.map((n) => Math.floor(calculateSlot(lockKeys('hf', n).holders) / 5462))).size).toBe(3);
      const rounds = 10;
      const worker = async (client: HoldfastClient, order: string[]) => {
        for (let i = 0; i < rounds; i++) await (await client.holdSet(order, { ttlMs: 5000, waitMs: 30_000 })).release();
      };
      await Promise.all([worker(sdkA, names), worker(sdkB, [...names].reverse())]);
      const last = [...names].sort().at(-1)!;
      const blocker = await sdkB.acquire(last, { ttlMs: 30_000 });
      await expect(sdkA.acquireSet(names, { ttlMs: 10_000, waitMs: 200 })).rejects.toBeInstanceOf(NotAcquiredError);
      const held = await Promise.all(names.map(async (n) => (await sdkA.inspect(n)).holders.length));
      expect(held).toEqual(names.map((n) => (n === last ? 1 : 0)));
      await blocker.release();
      const set = await sdkA.acquireSet(names, { ttlMs: 10_000 });
      expect(set.members).toHaveLength(3);
      expect(await set.release()).toEqual([]);
    } finally {
      sdkA.close();
      sdkB.close();
    }
  });

  it('keeps Hold streams on every node alive with batched renewals, and frees them on cancel', async () => {
    const names = namesOnEveryNode(9);
    const streams = names.map((name, i) => (i % 2 ? a : b).hold({ name, ttlMs: '300' }));
    await Promise.all(streams.map((s) => s.next(() => s.events.filter((e) => e.renewed).length >= 3)));
    expect(streams.every((s) => !s.events.some((e) => e.lost))).toBe(true);
    for (const name of names) expect((await a.inspect({ name })).holders).toHaveLength(1);
    streams.forEach((s) => s.call.cancel());
    for (const name of names) await waitFor('the hold to be released', async () => (await a.inspect({ name })).holders.length === 0);
  });

  it('renews Hold streams of locks that share a slot in one call, beside locks on other slots and nodes', async () => {
    // One renew-batch-3 call may touch one slot only (CROSSSLOT otherwise): a batch across the
    // slots of one node would fail every renewal in it and the holds would be lost.
    const names = [...namesSharingSlots(2), ...namesOnEveryNode(6)];
    const streams = names.map((name) => a.hold({ name, ttlMs: '300' }));
    await Promise.all(streams.map((s) => s.next(() => s.events.filter((e) => e.renewed).length >= 4)));
    expect(streams.filter((s) => s.events.some((e) => e.lost)).length).toBe(0);
    for (const name of names) expect((await b.inspect({ name })).holders).toHaveLength(1);
    streams.forEach((s) => s.call.cancel());
    for (const name of names) await waitFor('the hold to be released', async () => (await b.inspect({ name })).holders.length === 0);
  });

  it('keeps the locks one session holds on every node alive, with one SessionRenewed per tick for all, and frees them all on close', async () => {
    const names = namesOnEveryNode(9);
    const s = openSession(a.client);
    const grants = await Promise.all(names.map((name) => s.op({ hold: { name, ttlMs: '300' } })));
    expect(grants.every((g) => !!g.hold?.holdId)).toBe(true);
    const before = s.received.filter((r) => r.renewed).length;
    const leaseEnd = (r: { renewed?: { leaseStartedAfterMs: string; ttlMs: string } }) => Number(r.renewed!.leaseStartedAfterMs) + Number(r.renewed!.ttlMs);
    const first = leaseEnd(await s.next((r) => !!r.renewed));
    // Renewed until the session's deadline has moved four leases on: a lock on a node nobody renewed is gone by then.
    await s.next((r) => !!r.renewed && leaseEnd(r) >= first + 4 * 300);
    const reports = s.received.filter((r) => r.renewed).slice(before);
    expect(reports.every((r) => r.renewed!.locks === names.length)).toBe(true);
    expect(s.received.some((r) => r.lost)).toBe(false);
    for (const name of names) expect((await b.inspect({ name })).holders).toHaveLength(1);
    // A clean close gives every lock back at once: b's waiters are granted by push, not by expiry.
    const waiters = names.map((name) => b.acquire({ name, ttlMs: '5000', waitTimeoutMs: '20000' }));
    await waitFor('the waiters to queue', async () => (await Promise.all(names.map((name) => b.inspect({ name })))).every((i) => i.waiters === 1));
    s.send({ opId: '99', close: {} });
    expect((await s.ended).code).toBe(0);
    expect((await Promise.all(waiters)).every((g) => g.acquired)).toBe(true);
  });
});
