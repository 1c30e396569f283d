// holdfast on a real Redis Cluster of three masters with one replica each, while the master of
// one lock's shard is killed and the cluster promotes its replica: two holdfast servers, four
// workers contending for that lock. Service resumes within seconds of the promotion and the
// unavailability window is printed. With --sync-replicas 1 the shard that lost its master has no
// replica left to confirm grants, so its locks answer UNAVAILABLE while other shards grant.
import calculateSlot from 'cluster-key-slot';
import { status } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { lockKeys } from '../../src/engine/keys';
import type { EmbeddedRedis } from '../../src/redis/embedded';
import { connect, type TestClient } from '../support/client';
import { contend, expectExclusive } from '../support/contention';
import { startTestCluster, type TestCluster } from '../support/cluster';
import { uniqueName } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

let cluster: TestCluster;
let servers: ServerProcess[];
let clients: TestClient[];

beforeAll(async () => {
  cluster = await startTestCluster(3, 1, ['--repl-diskless-sync-delay', '0']);
  const seeds = cluster.nodes.join(',');
  servers = await Promise.all([
    // Default safety with a 3 s lease cap: the promoted shard's quarantine lasts 4 s, not 61.
    startServerProcess(undefined, ['--redis-cluster', seeds, '--max-ttl-ms', '3000', '--default-ttl-ms', '2000']),
    startServerProcess(undefined, ['--redis-cluster', seeds, '--max-ttl-ms', '3000', '--default-ttl-ms', '2000']),
    startServerProcess(undefined, ['--redis-cluster', seeds, '--sync-replicas', '1', '--unsafe-no-failover-safety', '--allow-min-replicas-zero']),
  ]);
  clients = servers.map((s) => connect(s.addr));
}, 90_000);
afterAll(async () => {
  clients?.forEach((c) => c.close());
  await Promise.all((servers ?? []).map((s) => s.stop()));
  await cluster?.cleanup();
});

/** The node serving `name`'s slot now, as the cluster says. */
async function masterOf(name: string, ask: EmbeddedRedis): Promise<number> {
  const slot = calculateSlot(lockKeys('hf', name).holders);
  const client = new Redis(ask.port, '127.0.0.1');
  try {
    const ranges = (await client.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    return ranges.find(([from, to]) => slot >= from && slot <= to)![2][1];
  } finally {
    client.disconnect();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('resumes within seconds when a shard master is killed and its replica promoted', async () => {
  const name = uniqueName('clf');
  const victimPort = await masterOf(name, cluster.servers[0]);
  const victim = cluster.servers.find((s) => s.port === victimPort)!;
  const survivor = cluster.servers.find((s) => s.port !== victimPort)!;
  let other = uniqueName('clf-other');
  while ((await masterOf(other, survivor)) === victimPort) other = uniqueName('clf-other');
  const contention = contend(
    [0, 1, 2, 3].map((i) => clients[i % 2]),
    name,
    2000,
  );
  await sleep(1500);
  const killedAt = Date.now();
  process.kill(victim.pid, 'SIGKILL');
  const promotedPort = await waitFor(
    'the replica to take over the slot',
    async () => {
      const port = await masterOf(name, survivor).catch(() => victimPort);
      return port !== victimPort ? port : 0;
    },
    30_000,
    50,
  );
  const promotedAt = Date.now();
  await waitFor('20 grants asked for after the kill', () => contention.windows.filter((w) => w.sentAt > killedAt).length >= 20, 30_000, 50).catch(
    (err: Error) => {
      // Seen once in CI (grants did not resume): say what the servers logged, for the diagnosis.
      const after = contention.windows.filter((w) => w.sentAt > killedAt).length;
      const logs = servers.slice(0, 2).map((s, i) => `server ${i}, last lines:\n${s.logs.slice(-25).join('\n')}`);
      throw new Error(
        `${err.message}; ${after} grants after the kill; promoted ${promotedAt - killedAt} ms after it; ${contention.describe()}\n${logs.join('\n')}`,
      );
    },
  );
  const windows = await contention.stop();

  expectExclusive(windows);
  const firstAfter = windows.find((w) => w.sentAt > killedAt)!.from;
  console.log(
    `Cluster failover under contention: ${windows.length} grants, none overlapping; replica ${promotedPort} promoted ` +
      `${promotedAt - killedAt} ms after the kill; first grant asked for after the kill came ${firstAfter - killedAt} ms after it`,
  );
  expect(firstAfter - promotedAt).toBeLessThan(10_000);

  // --sync-replicas 1: the promoted master has no replica, so its shard cannot confirm a grant;
  // a shard that kept its replica grants as before.
  const sync = clients[2];
  await expect(sync.acquire({ name, ttlMs: '2000', waitTimeoutMs: '0' })).rejects.toMatchObject({ code: status.UNAVAILABLE });
  expect((await sync.acquire({ name: other, ttlMs: '2000' })).acquired).toBe(true);
}, 120_000);
