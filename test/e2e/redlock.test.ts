// Redlock mode on five real, independent redis-server masters (no replication), behind the same
// gRPC API: grants need a majority, a restarted master sits out every lease it may have granted,
// and fencing tokens keep rising while nodes are killed and restarted without persistence.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { redlockKeys } from '../../src/engine/keys';
import { freePort, startEmbeddedRedis, type EmbeddedRedis } from '../../src/redis/embedded';
import { LostReason } from '../../gen/holdfast/v1/lock';
import { connect, type TestClient } from '../support/client';
import { contend, expectExclusive } from '../support/contention';
import { GRANTS, acquired, moved, readCounters, releasedBy, waited } from '../support/counters';
import { healthStatus } from '../support/health';
import { uniqueName } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { skewedClockEnv } from '../support/skewed-clock';
import { waitFor } from '../support/wait';

const MAX_TTL_MS = 1000;
const QUARANTINE_MS = MAX_TTL_MS + 300;

let root: string;
const nodes: EmbeddedRedis[] = [];
const servers: ServerProcess[] = [];
const clients: TestClient[] = [];
/** The negative control: a server that trusts restarted masters at once (they do not persist here). */
let trusting: ServerProcess;
let trustingClient: TestClient;
/** The first server's /metrics. */
let metricsBase: string;

async function startNode(i: number, port?: number): Promise<void> {
  nodes[i] = await startEmbeddedRedis({ dataDir: join(root, `node-${i}`), port, args: ['--save', ''] });
}

/** Kills node i and starts it again, empty (no persistence), on the same port. */
async function restartNode(i: number): Promise<void> {
  const port = nodes[i].port;
  await nodes[i].stop();
  await startNode(i, port);
}

/** Starts again (empty) every master a test left stopped, so that a failed test fails alone. */
async function allNodesUp(): Promise<void> {
  await Promise.all(nodes.map((n, i) => (n.process.exitCode !== null || n.process.signalCode !== null ? startNode(i, n.port) : undefined)));
}

const code = (p: Promise<unknown>) =>
  p.then(
    () => status.OK,
    (err: { code: number }) => err.code,
  );
const serving = (s: ServerProcess) => waitFor('health SERVING', async () => (await healthStatus(s.addr)) === 'SERVING', 20_000, 20);

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'holdfast-redlock-'));
  await Promise.all([0, 1, 2, 3, 4].map((i) => startNode(i)));
  // A node timeout that a busy 2-core machine meets (the default 100 ms is for production hosts).
  const args = [
    '--redlock',
    nodes.map((n) => n.url).join(','),
    '--max-ttl-ms',
    String(MAX_TTL_MS),
    '--quarantine-margin-ms',
    '300',
    '--default-ttl-ms',
    '1000',
    '--redlock-node-timeout-ms',
    '300',
  ];
  const httpPort = await freePort();
  metricsBase = `http://127.0.0.1:${httpPort}`;
  servers.push(
    ...(await Promise.all([startServerProcess(undefined, [...args, '--http-listen', `127.0.0.1:${httpPort}`]), startServerProcess(undefined, args)])),
  );
  clients.push(...servers.map((s) => connect(s.addr)));
  // (A longer --max-ttl-ms, so that its long first lease leaves no doubt about timing.)
  trusting = await startServerProcess(undefined, [...args, '--redlock-trust-restarts', '--max-ttl-ms', '10000']);
  trustingClient = connect(trusting.addr);
  // A new deployment: no master has an epoch record yet, so each sits out one quarantine.
  await Promise.all(servers.map(serving));
}, 60_000);
// Every test starts with all masters up and voting: a master restarted, frozen or cut off by the
// test before sits out until the servers trust it again.
afterEach(async () => {
  await allNodesUp();
  await Promise.all(servers.map(serving));
});
afterAll(async () => {
  clients.forEach((c) => c.close());
  trustingClient?.close();
  await Promise.all([...servers, trusting].filter(Boolean).map((s) => s.stop()));
  await Promise.all(nodes.map((n) => n.stop()));
  rmSync(root, { recursive: true, force: true });
});

it('grants with 2 of 5 masters down, never with 3 down (health NOT_SERVING), and again once they are back and have sat out the quarantine', async () => {
  const [a] = clients;
  const name = uniqueName('rl');
  const ports = nodes.map((n) => n.port);
  await Promise.all([nodes[3].stop(), nodes[4].stop()]);
  const grant = await a.acquire({ name, ttlMs: '1000', waitTimeoutMs: '5000' });
  expect(grant.acquired).toBe(true);
  expect(Number(grant.ttlMs)).toBeLessThan(1000); // the validity left, never the full ttl
  await a.release({ name, token: grant.token });

  await nodes[2].stop();
  await waitFor('health NOT_SERVING', async () => (await healthStatus(servers[0].addr)) === 'NOT_SERVING', 10_000, 20);
  expect(await code(a.acquire({ name, ttlMs: '1000' }))).toBe(status.UNAVAILABLE);
  const waited = await a.acquire({ name, ttlMs: '1000', waitTimeoutMs: '500' });
  expect(waited.acquired).toBe(false);
  expect(Number((await a.inspect({ name })).grantsResumeInMs)).toBeGreaterThan(0);

  // Back, empty: they forgot every vote, so they vote again only after the quarantine.
  const backAt = Date.now();
  await Promise.all([2, 3, 4].map((i) => startNode(i, ports[i])));
  const next = await a.acquire({ name, ttlMs: '1000', waitTimeoutMs: '10000' });
  expect(next.acquired).toBe(true);
  expect(Date.now() - backAt).toBeGreaterThanOrEqual(QUARANTINE_MS - 200);
  expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(grant.fencingToken));
  await a.release({ name, token: next.token });
  await serving(servers[0]);
}, 60_000);

it('never reports a grant that only a minority voted for, and takes back the minority votes', async () => {
  const name = uniqueName('rl');
  const { lease } = redlockKeys('hf', name);
  const direct = nodes.map((n) => new Redis(n.url));
  try {
    // Another holder has the votes of three masters.
    await Promise.all(direct.slice(0, 3).map((r) => r.multi().hset(lease, 't', 'someone-else', 'o', 'x', 'l', 5000).pexpire(lease, 5000).exec()));
    const grant = await clients[0].acquire({ name, ttlMs: '1000' });
    expect(grant.acquired).toBe(false);
    expect(await direct[3].exists(lease)).toBe(0);
    expect(await direct[4].exists(lease)).toBe(0);
    expect(await direct[0].hget(lease, 't')).toBe('someone-else');
    const waited = await clients[1].acquire({ name, ttlMs: '1000', waitTimeoutMs: '300' });
    expect(waited.acquired).toBe(false);
    await Promise.all(direct.map((r) => r.del(lease)));
  } finally {
    direct.forEach((r) => r.disconnect());
  }
});

it('refuses what Redlock cannot do safely with FAILED_PRECONDITION: shared locks, semaphores, reentrancy, request ids', async () => {
  const [a] = clients;
  expect(await code(a.acquire({ name: uniqueName('rl'), mode: 2 }))).toBe(status.FAILED_PRECONDITION);
  expect(await code(a.acquire({ name: uniqueName('rl'), limit: 3 }))).toBe(status.FAILED_PRECONDITION);
  expect(await code(a.acquire({ name: uniqueName('rl'), requestId: 'r'.repeat(20) }))).toBe(status.FAILED_PRECONDITION);
  const name = uniqueName('rl');
  const held = await a.acquire({ name, owner: 'w1', ttlMs: '1000' });
  expect(held.acquired).toBe(true);
  expect(await code(a.acquire({ name, owner: 'w1', ttlMs: '1000' }))).toBe(status.FAILED_PRECONDITION);
  await a.release({ name, token: held.token });
});

it('keeps fencing tokens strictly increasing over 1000 grants while a different master restarts empty every 0.8 s; one holder at a time', async () => {
  const name = uniqueName('rl');
  let restarting = true;
  let restarts = 0;
  const restarter = (async () => {
    for (let i = 0; restarting; i = (i + 1) % nodes.length) {
      await new Promise((r) => setTimeout(r, 800));
      if (!restarting) break;
      await restartNode(i);
      restarts++;
    }
  })();
  // Two servers, four workers, each grant logged as its client's conservative window.
  const contention = contend(
    [0, 1, 0, 1].map((i) => clients[i]),
    name,
    1000,
  );
  await waitFor('1000 grants', () => contention.windows.length >= 1000, 120_000, 50);
  const windows = await contention.stop();
  restarting = false;
  await restarter;
  expectExclusive(windows);
  expect(restarts).toBeGreaterThanOrEqual(3);
  console.log(
    `Redlock: ${windows.length} grants, none overlapping, fencing tokens rising, across ${restarts} restarts without persistence (${contention.unavailable} UNAVAILABLE answers)`,
  );
}, 150_000);

it('a master frozen (SIGSTOP) past the validity window does not let two clients hold at once', async () => {
  const [a, b] = clients;
  const name = uniqueName('rl');
  const frozen = nodes[0];
  process.kill(frozen.pid, 'SIGSTOP');
  try {
    const sentAt = Date.now();
    // Four votes, the frozen one timing out (waiting out any master still sitting out a restart).
    const first = await a.acquire({ name, ttlMs: '1000', waitTimeoutMs: '5000' });
    expect(first.acquired).toBe(true);
    const firstEnds = sentAt + Number(first.leaseStartedAfterMs) + Number(first.ttlMs);
    // No release: the first holder's lease runs out while the node stays frozen.
    const second = await b.acquire({ name, ttlMs: '1000', waitTimeoutMs: '5000' });
    const secondAt = Date.now();
    expect(second.acquired).toBe(true);
    expect(secondAt).toBeGreaterThanOrEqual(firstEnds);
    process.kill(frozen.pid, 'SIGCONT');
    // The thawed node now runs the first grant's late request (a vote for a lease long over):
    // it must not add up to a second holder while the second grant lives.
    const third = await a.acquire({ name, ttlMs: '1000' });
    expect(third.acquired).toBe(false);
    const info = await a.inspect({ name });
    expect(info.holders.map((h) => h.fencingToken)).toEqual([second.fencingToken]);
    await b.release({ name, token: second.token });
  } finally {
    process.kill(frozen.pid, 'SIGCONT');
  }
}, 30_000);

it('a Hold renews through a majority and ends lost when it has none; Release of its token ends it as released', async () => {
  const [a, b] = clients;
  const held = a.hold({ name: uniqueName('rl'), ttlMs: '600' });
  const acquired = await held.next((e) => !!e.acquired);
  await held.next((e) => !!e.renewed);
  expect(acquired.acquired!.fencingToken).not.toBe('0');

  const releasedName = uniqueName('rl');
  const released = a.hold({ name: releasedName, ttlMs: '600' });
  const grant = (await released.next((e) => !!e.acquired)).acquired!;
  await b.release({ name: releasedName, token: grant.token }); // from another server
  expect((await released.ended).code).toBe(status.OK);

  const ports = nodes.map((n) => n.port);
  await Promise.all([2, 3, 4].map((i) => nodes[i].stop()));
  const lost = await held.next((e) => !!e.lost);
  expect(lost.lost!.code).toBe(LostReason.LOST_REASON_BACKEND_UNAVAILABLE);
  await Promise.all([2, 3, 4].map((i) => startNode(i, ports[i])));
  await serving(servers[0]);
}, 30_000);

it('negative control: trusting a restarted master that did not persist hands a held lock to a second client; the restart quarantine does not', async () => {
  const [a] = clients;
  const name = uniqueName('rl');
  const ports = nodes.map((n) => n.port);
  await serving(servers[0]);
  // The holder has the votes of masters 0, 1, 2 (3 and 4 are down).
  await Promise.all([nodes[3].stop(), nodes[4].stop()]);
  const sentAt = Date.now();
  const first = await trustingClient.acquire({ name, ttlMs: '8000', waitTimeoutMs: '3000' });
  expect(first.acquired).toBe(true);
  const firstEnds = sentAt + Number(first.leaseStartedAfterMs) + Number(first.ttlMs);
  // Masters 0 and 1 restart without persistence: they forgot that vote; 3 and 4 come back.
  await Promise.all([restartNode(0), restartNode(1), startNode(3, ports[3]), startNode(4, ports[4])]);
  // The server that sits restarted masters out cannot find a majority for anyone else.
  expect(await code(a.acquire({ name, ttlMs: '1000' }))).toBe(status.UNAVAILABLE);
  // The one that trusts them grants the lock again while the first lease still runs.
  const second = await waitFor(
    'the trusting server to grant it again',
    async () => {
      const r = await trustingClient.acquire({ name, ttlMs: '1000' }).catch(() => undefined);
      return r?.acquired ? { r, at: Date.now() } : undefined;
    },
    5_000,
    10,
  );
  expect(second!.at).toBeLessThan(firstEnds);
  await trustingClient.release({ name, token: second!.r.token });
  await serving(servers[0]);
}, 30_000);

it('fencing tokens come from what a majority has seen, not from one clock: after a grant on a master 60 s ahead, the next token is still higher without it', async () => {
  const [a] = clients;
  const name = uniqueName('rl');
  const port = nodes[0].port;
  await nodes[0].stop();
  nodes[0] = await startEmbeddedRedis({ dataDir: join(root, 'node-0'), port, args: ['--save', ''], env: skewedClockEnv(60_000) });
  // Wait until the fast master votes (after its restart quarantine): its clock sets the token.
  let first = await a.acquire({ name, ttlMs: '1000', waitTimeoutMs: '5000' });
  const realUs = () => BigInt(Date.now()) * 1000n;
  while (BigInt(first.fencingToken) < realUs() + 50_000_000n) {
    await a.release({ name, token: first.token });
    first = await a.acquire({ name, ttlMs: '1000', waitTimeoutMs: '5000' });
  }
  await a.release({ name, token: first.token });
  await nodes[0].stop(); // the only master whose clock is that far ahead
  const second = await a.acquire({ name, ttlMs: '1000', waitTimeoutMs: '5000' });
  expect(second.acquired).toBe(true);
  // Every voter's clock is about real time, 60 s behind the first token: only the highest token
  // read from the majority (which shares a master with the majority that took it) can put the
  // second one above it.
  expect(BigInt(second.fencingToken)).toBeGreaterThan(BigInt(first.fencingToken));
  await a.release({ name, token: second.token });
  nodes[0] = await startEmbeddedRedis({ dataDir: join(root, 'node-0'), port, args: ['--save', ''] });
  await serving(servers[0]);
}, 30_000);

it('a failed attempt with no vote at all is taken back on the masters that timed out: frozen ones find no vote left when they thaw', async () => {
  const name = uniqueName('rl');
  const { lease } = redlockKeys('hf', name);
  const direct = nodes.map((n) => new Redis(n.url));
  const frozen = [0, 1, 2].map((i) => nodes[i]);
  try {
    // Masters 3 and 4 vote for someone else; 0, 1 and 2 are frozen: no vote answers at all.
    await Promise.all(direct.slice(3).map((r) => r.multi().hset(lease, 't', 'someone-else', 'o', 'x', 'l', 5000).pexpire(lease, 5000).exec()));
    frozen.forEach((n) => process.kill(n.pid, 'SIGSTOP'));
    try {
      // The frozen masters still have the request (and then the take-back) on their sockets.
      expect((await clients[0].acquire({ name, ttlMs: '1000' })).acquired).toBe(false);
    } finally {
      frozen.forEach((n) => process.kill(n.pid, 'SIGCONT'));
    }
    await Promise.all(direct.map((r) => r.ping()));
    // Without the take-back, the thawed masters would hold a vote for this failed attempt.
    expect(await Promise.all(direct.map((r) => r.exists(lease)))).toEqual([0, 0, 0, 1, 1]);
    await Promise.all(direct.map((r) => r.del(lease)));
  } finally {
    direct.forEach((r) => r.disconnect());
  }
}, 30_000);

it('reports its grants, waits, releases and lost leases to metrics, as the Redis engine does', async () => {
  const [a] = clients;
  const before = await readCounters(metricsBase);
  const name = uniqueName('rl');
  const held = a.hold({ name, ttlMs: '1000' });
  await held.next((e) => !!e.acquired);
  expect((await a.acquire({ name, waitTimeoutMs: '1500' })).acquired).toBe(false); // waits, then gives up
  held.call.cancel(); // the holder's word: released at once
  expect((await held.ended).code).toBe(status.CANCELLED);
  const capped = a.hold({ name: uniqueName('rl'), ttlMs: '1000', maxHoldMs: '700' });
  expect((await capped.next((e) => !!e.lost)).lost!.code).toBe(LostReason.LOST_REASON_MAX_HOLD);
  const expected: Record<string, number> = {
    [GRANTS]: 2,
    [acquired('granted')]: 2,
    [acquired('not_granted')]: 1,
    [waited('not_granted')]: 1,
    [releasedBy('holder')]: 1,
    'holdfast_leases_lost_total{reason="max_hold"}': 1,
  };
  let now: Record<string, number> = {};
  await waitFor('the counters to move', async () => {
    now = moved(before, await readCounters(metricsBase));
    return Object.entries(expected).every(([series, by]) => (now[series] ?? 0) >= by);
  }).catch(() => {});
  expect(Object.fromEntries(Object.keys(expected).map((series) => [series, now[series] ?? 0]))).toEqual(expected);
}, 30_000);
