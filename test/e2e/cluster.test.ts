// holdfast on a real three-master Redis Cluster: every lock kind, waiting with sharded pub/sub
// wake-ups, and Hold renewals batched per node, for lock names spread over all nodes.
import calculateSlot from 'cluster-key-slot';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockMode } from '../../clients/ts/gen/holdfast/v1/lock';
import { lockKeys } from '../../src/engine/keys';
import { connect, type TestClient } from '../support/client';
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

  it('keeps Hold streams on every node alive with batched renewals, and frees them on cancel', async () => {
    const names = namesOnEveryNode(9);
    const streams = names.map((name, i) => (i % 2 ? a : b).hold({ name, ttlMs: '300' }));
    await Promise.all(streams.map((s) => s.next(() => s.events.filter((e) => e.renewed).length >= 3)));
    expect(streams.every((s) => !s.events.some((e) => e.lost))).toBe(true);
    for (const name of names) expect((await a.inspect({ name })).holders).toHaveLength(1);
    streams.forEach((s) => s.call.cancel());
    for (const name of names) await waitFor('the hold to be released', async () => (await a.inspect({ name })).holders.length === 0);
  });
});
