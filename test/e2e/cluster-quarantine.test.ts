// The failover quarantine on a real Redis Cluster (three masters, one replica each), where each
// shard fails over on its own: the lost-write failover of one shard (its master acknowledges a
// grant that its replica never gets, then dies) must not let that lock be granted again while
// the lost grant's client may still hold it, and the other shards must go on granting
// meanwhile, with default flags. A second server with --unsafe-no-failover-safety on the same cluster is the negative
// control: it hands the lost lock out again while the lost lease still runs.
import calculateSlot from 'cluster-key-slot';
import { status } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { lockKeys } from '../../src/engine/keys';
import type { EmbeddedRedis } from '../../src/redis/embedded';
import { connect, type TestClient } from '../support/client';
import { startTestCluster, type TestCluster } from '../support/cluster';
import { expectFailoverLoss } from '../support/failover-loss';
import { healthStatus } from '../support/health';
import { uniqueName } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

const MAX_TTL_MS = 6000;

let cluster: TestCluster;
let guarded: ServerProcess;
let plain: ServerProcess;
let q: TestClient;
let n: TestClient;

beforeAll(async () => {
  // A short node timeout: the failover must be over well within the lost lease.
  cluster = await startTestCluster(3, 1, ['--repl-diskless-sync-delay', '0', '--cluster-node-timeout', '1000']);
  const seeds = cluster.nodes.join(',');
  [guarded, plain] = await Promise.all([
    startServerProcess(undefined, ['--redis-cluster', seeds, '--max-ttl-ms', String(MAX_TTL_MS), '--quarantine-margin-ms', '500', '--default-ttl-ms', '2000']),
    startServerProcess(undefined, ['--redis-cluster', seeds, '--unsafe-no-failover-safety']),
  ]);
  q = connect(guarded.addr);
  n = connect(plain.addr);
}, 90_000);
afterAll(async () => {
  q?.close();
  n?.close();
  await Promise.all([guarded?.stop(), plain?.stop()]);
  await cluster?.cleanup();
});

const code = (p: Promise<unknown>) =>
  p.then(
    () => status.OK,
    (err: { code: number }) => err.code,
  );

function client(node: EmbeddedRedis): Redis {
  const c = new Redis(node.port, '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 200 });
  c.on('error', () => {});
  return c;
}

/** The port of the master serving `name`'s slot, as `ask` says. */
async function masterOf(name: string, ask: EmbeddedRedis): Promise<number> {
  const slot = calculateSlot(lockKeys('hf', name).holders);
  const c = client(ask);
  try {
    const ranges = (await c.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    return ranges.find(([from, to]) => slot >= from && slot <= to)![2][1];
  } finally {
    c.disconnect();
  }
}

/** A fresh name whose slot `port` serves (or, with `not`, does not serve). */
async function nameOn(port: number, ask: EmbeddedRedis, not = false): Promise<string> {
  for (;;) {
    const name = uniqueName('cq');
    if (((await masterOf(name, ask)) === port) !== not) return name;
  }
}

it('quarantines each shard on its own: a lost grant is not granted again during its lease, other shards keep granting', async () => {
  // A new deployment has no epoch records: every shard waits one quarantine first.
  await waitFor('health SERVING after the start-up quarantine', async () => (await healthStatus(guarded.addr)) === 'SERVING', 30_000, 100);

  const ask = cluster.servers[0];
  const victimPort = await masterOf(uniqueName('cq'), ask);
  const victim = cluster.servers.find((s) => s.port === victimPort)!;
  const survivor = cluster.servers.find((s) => s.port !== victimPort)!;
  const info = client(victim);
  const replicaPort = Number(/slave0:ip=[^,]+,port=(\d+)/.exec(await info.info('replication'))![1]);
  info.disconnect();
  const replica = cluster.servers.find((s) => s.port === replicaPort)!;
  const name = await nameOn(victimPort, survivor);
  const other = await nameOn(victimPort, survivor, true);
  const lostHoldName = await nameOn(victimPort, survivor);

  // The lost write: the replica is frozen and cut off (a frozen replica would still read what
  // its socket buffered), so only the master has these grants.
  process.kill(replica.pid, 'SIGSTOP');
  const victimClient = client(victim);
  await victimClient.call('CLIENT', 'KILL', 'TYPE', 'replica');
  victimClient.disconnect();
  const sentAt = Date.now();
  const lost = await q.acquire({ name, ttlMs: String(MAX_TTL_MS) });
  expect(lost.acquired).toBe(true);
  const holdSentAt = Date.now();
  const lostHold = q.hold({ name: lostHoldName, ttlMs: String(MAX_TTL_MS) });
  await lostHold.next((e) => !!e.acquired);
  process.kill(victim.pid, 'SIGKILL');
  process.kill(replica.pid, 'SIGCONT');
  const killedAt = Date.now();
  await waitFor('the replica to take over the slot', async () => (await masterOf(name, survivor).catch(() => victimPort)) === replicaPort, 30_000, 50);
  const promotedAt = Date.now();

  // Negative control: without the quarantine the lost lock is granted again while its lease runs.
  const again = (await waitFor(
    'the unguarded server to grant the lost lock',
    async () => {
      const r = await n.acquire({ name, ttlMs: '500' }).catch(() => undefined);
      return r?.acquired ? { r, at: Date.now() } : undefined;
    },
    30_000,
    20,
  ))!;
  expect(again.at).toBeLessThan(sentAt + MAX_TTL_MS);
  await n.release({ name, token: again.r.token });

  // The guarded server: the failed-over shard is quarantined, the others grant.
  const probe = await nameOn(replicaPort, survivor);
  await waitFor('the quarantine of the failed-over shard', async () => Number((await q.inspect({ name })).grantsResumeInMs) > 0, 10_000, 20);
  expect(await code(q.acquire({ name: probe, ttlMs: '1000' }))).toBe(status.UNAVAILABLE);
  expect(await healthStatus(guarded.addr)).toBe('NOT_SERVING');
  // Meanwhile a lock on another shard is granted (once the server has its new slot map).
  const otherGranted = await waitFor(
    'a grant on another shard',
    async () => {
      const r = await q.acquire({ name: other, ttlMs: '1000' }).catch(() => undefined);
      return r?.acquired ? Date.now() : 0;
    },
    10_000,
    20,
  );
  expect(otherGranted).toBeLessThan(sentAt + MAX_TTL_MS);
  expect(Number((await q.inspect({ name })).grantsResumeInMs)).toBeGreaterThan(0);

  // A waiter gets the lost lock only after the lost grant's lease (from its send time) is over.
  const next = await q.acquire({ name, ttlMs: '1000', waitTimeoutMs: '30000' });
  const grantedAt = Date.now();
  expect(next.acquired).toBe(true);
  expect(grantedAt).toBeGreaterThanOrEqual(sentAt + MAX_TTL_MS);
  expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(lost.fencingToken));
  // 1.5 s after the promotion covers the server's slot map refresh and the renewal tick.
  const lostEvent = await lostHold.next((e) => !!e.lost);
  expectFailoverLoss(lostEvent.lost!.code, { sentAt: holdSentAt, ttlMs: MAX_TTL_MS }, promotedAt, 1500);
  await waitFor('health SERVING again', async () => (await healthStatus(guarded.addr)) === 'SERVING', 30_000, 100);
  console.log(
    `Cluster quarantine: replica promoted ${promotedAt - killedAt} ms after the kill; unguarded server re-granted the lost lock ` +
      `${again.at - sentAt} ms into its ${MAX_TTL_MS} ms lease; guarded server granted it ${grantedAt - sentAt} ms after it was sent`,
  );
}, 120_000);
