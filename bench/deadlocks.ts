// `npm run bench:deadlocks`: what deadlock detection costs (docs/deadlocks.md). One redis-server
// and two holdfast servers on it, one with detection on and one with it off
// (--deadlock-timeout-ms 0); rounds alternate between them so that load from elsewhere on the
// machine falls on both alike, and each figure is given beside the other measured in the same run.
//
// 1. Short waits (no cycles, none reaching the timeout): workers hand locks to each other, each
//    with its own owner; the cost is following each wait until it ends. Hand-offs per second, server CPU per wait.
// 2. Long waits (no cycles, each past the timeout): holders keep their locks for longer than the
//    timeout, each waiter queued behind one; every wait writes its record and walks once. Server
//    and Redis CPU per wait, and Redis calls per wait.
// 3. Walks over long chains: owner i holds lock i and waits for lock i + 1; the last closes the
//    cycle by waiting for lock 0. How long after the timeout the closing wait is answered ABORTED
//    (the walk, the re-check of every edge and the abort), and Redis calls per owner of the cycle.
import { status, type ServiceError } from '@grpc/grpc-js';
import {
  commandCalls,
  cpuSeconds,
  fixed,
  lockClient,
  machineNote,
  markdownTable,
  median,
  nowMs,
  redisCounters,
  report,
  setting,
  startBenchRedis,
  startHoldfast,
  type BenchRedis,
  type HoldfastProcess,
  type LockClient,
} from './support';

const ROUNDS = setting('rounds', 'HOLDFAST_BENCH_ROUNDS', 3);
const SECONDS = setting('seconds', 'HOLDFAST_BENCH_SECONDS', 3);
/** Workers per lock in the short-wait part: each release hands the lock to a waiter. */
const PER_LOCK = 4;
const LOCKS = 8;
/** Long waits per round, and the timeout the server with detection on uses there and for chains. */
const LONG_WAITS = setting('long-waits', 'HOLDFAST_BENCH_LONG_WAITS', 50);
const TIMEOUT_MS = 200;
const CHAINS = [2, 8, 32, 128, 250];

interface Side {
  label: string;
  server: HoldfastProcess;
  clients: LockClient[];
  handOffsPerS: number[];
  cpuPerWaitUs: number[];
  longServerCpuUs: number[];
  longRedisCpuUs: number[];
  longCallsPerWait: number[];
}

let run = 0;
const unique = (what: string) => `bench-dl-${process.pid}-${++run}-${what}`;

/** Hand-offs in `seconds`: PER_LOCK workers per lock, each acquire waits, holds 0 ms, releases. */
async function shortWaits(side: Side): Promise<{ waits: number; cpuUs: number }> {
  const prefix = unique('short');
  const cpu0 = cpuSeconds(side.server.pid);
  const until = nowMs() + SECONDS * 1000;
  let waits = 0;
  await Promise.all(
    Array.from({ length: LOCKS * PER_LOCK }, async (_, i) => {
      const client = side.clients[i % side.clients.length];
      const name = `${prefix}-${i % LOCKS}`;
      const owner = `${prefix}-owner-${i}`;
      while (nowMs() < until) {
        const grant = await client.acquire({ name, owner, ttlMs: '5000', waitTimeoutMs: '5000' });
        if (!grant.acquired) continue;
        waits++;
        await client.release({ name, token: grant.token });
      }
    }),
  );
  return { waits, cpuUs: ((cpuSeconds(side.server.pid) - cpu0) / waits) * 1e6 };
}

/** LONG_WAITS waiters, each queued behind a holder that keeps its lock 2.5 x the timeout. */
async function longWaits(side: Side, redis: BenchRedis): Promise<{ serverUs: number; redisUs: number; calls: number }> {
  const prefix = unique('long');
  const client = side.clients[0];
  const holds = await Promise.all(
    Array.from({ length: LONG_WAITS }, (_, i) => client.acquire({ name: `${prefix}-${i}`, owner: `${prefix}-holder-${i}`, ttlMs: '30000' })),
  );
  const before = await redisCounters(redis.client);
  const cpu0 = cpuSeconds(side.server.pid);
  const waits = Array.from({ length: LONG_WAITS }, (_, i) =>
    side.clients[i % side.clients.length].acquire({ name: `${prefix}-${i}`, owner: `${prefix}-waiter-${i}`, ttlMs: '5000', waitTimeoutMs: '20000' }),
  );
  await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS * 2.5));
  await Promise.all(holds.map((h, i) => client.release({ name: `${prefix}-${i}`, token: h.token })));
  const grants = await Promise.all(waits);
  const serverUs = ((cpuSeconds(side.server.pid) - cpu0) / LONG_WAITS) * 1e6;
  const after = await redisCounters(redis.client);
  await Promise.all(grants.map((g, i) => client.release({ name: `${prefix}-${i}`, token: g.token })));
  return { serverUs, redisUs: ((after.cpu - before.cpu) / LONG_WAITS) * 1e6, calls: (after.commands - before.commands) / LONG_WAITS };
}

/** A cycle of `owners` owners closed last; ms from the closing wait's send to its ABORTED, and Redis calls meanwhile. */
async function chain(clients: LockClient[], redis: BenchRedis, owners: number): Promise<{ ms: number; calls: number }> {
  const prefix = unique(`chain${owners}`);
  const lock = (i: number) => `${prefix}-${i % owners}`;
  const owner = (i: number) => `${prefix}-owner-${i}`;
  const client = (i: number) => clients[i % clients.length];
  const holds = await Promise.all(Array.from({ length: owners }, (_, i) => client(i).acquire({ name: lock(i), owner: owner(i), ttlMs: '60000' })));
  const waits = Array.from({ length: owners - 1 }, (_, i) =>
    client(i)
      .acquire({ name: lock(i + 1), owner: owner(i), ttlMs: '60000', waitTimeoutMs: '30000' })
      .catch((err: ServiceError) => err),
  );
  for (let i = 1; i < owners; i++) while ((await clients[0].inspect({ name: lock(i) })).waiters < 1) await new Promise((r) => setTimeout(r, 5));
  // Close it between the chain's own walks (each finds no cycle; at 1x and 3x the timeout, then
  // 7x), so that the figure is the closing walk's, not a herd's; the herd is measured on its own.
  await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS * 4));
  const calls0 = sum(await commandCalls(redis.client));
  const sent = nowMs();
  const closing = await client(owners - 1)
    .acquire({ name: lock(0), owner: owner(owners - 1), ttlMs: '60000', waitTimeoutMs: '30000' })
    .then(
      () => null,
      (err: ServiceError) => err,
    );
  const ms = nowMs() - sent;
  const calls = sum(await commandCalls(redis.client)) - calls0;
  if (closing?.code !== status.ABORTED) throw new Error(`a cycle of ${owners} owners was not ended: ${closing?.message ?? 'granted'}`);
  await Promise.all(holds.map((h, i) => client(i).release({ name: lock(i), token: h.token })));
  const granted = await Promise.all(waits);
  await Promise.all(granted.map((g, i) => ('token' in g && g.acquired ? client(i).release({ name: lock(i + 1), token: g.token }) : Promise.resolve())));
  return { ms, calls };
}

function sum(calls: Map<string, number>): number {
  let total = 0;
  for (const n of calls.values()) total += n;
  return total;
}

async function main(): Promise<void> {
  const note = machineNote();
  const redis = await startBenchRedis();
  const sides: Side[] = [];
  try {
    for (const [label, timeout] of [
      ['detection on', String(TIMEOUT_MS)],
      ['detection off', '0'],
    ]) {
      const server = await startHoldfast(redis.url, ['--deadlock-timeout-ms', timeout]);
      sides.push({
        label,
        server,
        clients: Array.from({ length: 4 }, () => lockClient(server.addr)),
        handOffsPerS: [],
        cpuPerWaitUs: [],
        longServerCpuUs: [],
        longRedisCpuUs: [],
        longCallsPerWait: [],
      });
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        const short = await shortWaits(side);
        side.handOffsPerS.push(short.waits / SECONDS);
        side.cpuPerWaitUs.push(short.cpuUs);
        const long = await longWaits(side, redis);
        side.longServerCpuUs.push(long.serverUs);
        side.longRedisCpuUs.push(long.redisUs);
        side.longCallsPerWait.push(long.calls);
      }
    }
    const [on, off] = sides;
    const row = (label: string, of: (side: Side) => number[], digits = 0) => [
      label,
      fixed(median(of(on)), digits),
      fixed(median(of(off)), digits),
      `${fixed(median(of(on)) / median(of(off)), 2)}x`,
    ];
    const waitsTable = markdownTable(
      ['', 'detection on', 'detection off', 'on / off'],
      [
        row(`short waits: hand-offs/s (${LOCKS} locks x ${PER_LOCK} workers)`, (s) => s.handOffsPerS),
        row('short waits: server CPU µs per wait', (s) => s.cpuPerWaitUs),
        row(`long waits (${fixed(TIMEOUT_MS * 2.5, 0)} ms, ${LONG_WAITS} a round): server CPU µs per wait`, (s) => s.longServerCpuUs),
        row('long waits: Redis CPU µs per wait', (s) => s.longRedisCpuUs),
        row('long waits: Redis commands per wait', (s) => s.longCallsPerWait, 1),
      ],
    );
    const chainRows: string[][] = [];
    for (const owners of CHAINS) {
      const { ms, calls } = await chain(on.clients, redis, owners);
      chainRows.push([String(owners), fixed(ms, 0), fixed(ms - TIMEOUT_MS, 0), fixed(calls, 0), fixed(calls / owners, 1)]);
    }
    const chainTable = markdownTable(
      ['owners in the cycle', 'closing wait answered ABORTED after (ms)', 'beyond the timeout (ms)', 'Redis commands meanwhile', 'per owner'],
      chainRows,
    );
    report(
      'deadlocks.md',
      'npm run bench:deadlocks',
      'Deadlock detection: what it costs',
      `One redis-server and two holdfast servers on it, --deadlock-timeout-ms ${TIMEOUT_MS} and 0, ${ROUNDS} alternating rounds (medians). Short waits never reach the timeout; long waits each pass it once (a record and one walk, no cycle). Chains are on the server with detection on: owner i holds lock i and waits for lock i + 1, then the last owner closes the cycle by waiting for lock 0, and its wait is the one ended. The walk stops at 256 owners.`,
      note,
      `${waitsTable}\n\n${chainTable}`,
      [
        "A wait that ends before the timeout costs an entry in the detector's set (one sweep per server looks at them): the short-wait rows are the price of detection being on for everyone.",
        "The commands counted during a chain include the servers' background work in that time (claims, renewals, failover checks) and the abort's hand-offs; a walk itself is 2 calls per owner visited and 1 per edge checked again.",
        'Every wait past the timeout walks from its own owner (again at 3x and 7x the timeout, doubling): in a chain of N waiting owners started together, N walks of up to N steps run at once, N^2 calls in a burst. The closing wait is timed between those bursts.',
      ],
    );
  } finally {
    for (const side of sides) side.clients.forEach((c) => c.close());
    await Promise.all(sides.map((s) => s.server.stop()));
    await redis.cleanup();
  }
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
