// Deadlock detection on a real three-master Redis Cluster: a cycle of three owners whose locks,
// and whose wait records, live on three different shards, waiting through two servers.
import { status, type ServiceError } from '@grpc/grpc-js';
import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockKeys, waitsKey } from '../../src/engine/keys';
import { connect, type TestClient } from '../support/client';
import { startTestCluster, type TestCluster } from '../support/cluster';
import { uniqueName } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

const TIMEOUT_MS = 500;
/** As in deadlocks.test.ts: room for a busy 2-core machine beyond a walk of a few ms per hop. */
const BOUND_MS = 1500;

let cluster: TestCluster;
let servers: ServerProcess[];
let clients: TestClient[];

beforeAll(async () => {
  cluster = await startTestCluster();
  const args = ['--redis-cluster', cluster.nodes.join(','), '--deadlock-timeout-ms', String(TIMEOUT_MS)];
  servers = await Promise.all([startServerProcess(undefined, args), startServerProcess(undefined, args)]);
  clients = servers.map((s) => connect(s.addr));
}, 60_000);
afterAll(async () => {
  clients?.forEach((c) => c.close());
  await Promise.all((servers ?? []).map((s) => s.stop()));
  await cluster?.cleanup();
});

/** Which third of the slots (one master each in startTestCluster) a key is in. */
const shardOf = (key: string) => Math.floor(calculateSlot(key) / 5462);

/** One name per shard, for keys made by `keyOf`. */
function onePerShard(label: string, keyOf: (name: string) => string): string[] {
  const names: string[] = [];
  while (names.length < 3) {
    const name = uniqueName(label);
    if (shardOf(keyOf(name)) === names.length) names.push(name);
  }
  return names;
}

describe('deadlock detection on a Redis Cluster', () => {
  it('ends the youngest wait of a three-owner cycle whose locks and owners live on three shards', async () => {
    const locks = onePerShard('l', (n) => lockKeys('hf', n).holders);
    // Each owner's records on another shard than the lock it waits for.
    const owners = onePerShard('o', (n) => waitsKey('hf', n)).map((_, i, all) => all[(i + 1) % 3]);
    const grants = await Promise.all(owners.map((o, i) => clients[i % 2].acquire({ name: locks[i], owner: o, ttlMs: '30000' })));
    const waits: Promise<{ granted: boolean; token: string; error: ServiceError | null }>[] = [];
    for (let i = 0; i < 3; i++) {
      const next = locks[(i + 1) % 3];
      waits.push(
        clients[(i + 1) % 2].acquire({ name: next, owner: owners[i], ttlMs: '30000', waitTimeoutMs: '20000' }).then(
          (r) => ({ granted: r.acquired, token: r.token, error: null }),
          (err: ServiceError) => ({ granted: false, token: '', error: err }),
        ),
      );
      await waitFor(`owner ${i} to queue`, async () => (await clients[0].inspect({ name: next })).waiters === 1);
    }
    const closed = performance.now();
    const ended = await waits[2];
    expect(performance.now() - closed).toBeLessThan(TIMEOUT_MS + BOUND_MS);
    expect(ended.error?.code).toBe(status.ABORTED);
    for (const text of [...locks, ...owners]) expect(ended.error!.details).toContain(`"${text}"`);
    expect(ended.error!.details).toContain(`This wait (owner "${owners[2]}" on lock "${locks[0]}")`);
    // The aborted owner gives back its lock: the others are granted in turn.
    await clients[0].release({ name: locks[2], token: grants[2].token });
    const second = await waits[1];
    expect(second.granted).toBe(true);
    await clients[0].release({ name: locks[2], token: second.token });
    await clients[0].release({ name: locks[1], token: grants[1].token });
    const first = await waits[0];
    expect(first.granted).toBe(true);
    await clients[0].release({ name: locks[1], token: first.token });
    await clients[0].release({ name: locks[0], token: grants[0].token });
  });
});
