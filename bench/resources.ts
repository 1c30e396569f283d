// Benchmark of issue 18, item 5: what one queued waiter and one Hold stream cost the server (RSS)
// and Redis (used_memory), what they cost in CPU while idle, and the latency of an unrelated
// Acquire+Release pair on another connection meanwhile. The load runs in child processes
// (resources-load.ts), so the pairs are timed from a process that does nothing else.
//
//   node bench/dist/bench/resources.js [--waiters=10000] [--waiters-per-lock=1000,10] [--holds=10000]
//                                      [--seconds=30] [--per-connection=500] [--ttl-ms=30000]
// (or HOLDFAST_BENCH_WAITERS, _WAITERS_PER_LOCK, _HOLDS, _SECONDS, _PER_CONNECTION, _TTL_MS)
import { randomBytes } from 'node:crypto';
import { ReleaseRequest } from '../gen/holdfast/v1/lock';
import { lockKeys } from '../src/engine/keys';
import { LOAD_PROCESSES, LOAD_TIMEOUT_MS, startLoad, type Load } from './resources-load';
import {
  cpuSeconds,
  fixed,
  lockClient,
  machineNote,
  markdownTable,
  nowMs,
  quantile,
  redisCounters,
  redisInfo,
  rssKiB,
  setting,
  sleep,
  startBenchRedis,
  startHoldfast,
  writeResult,
  type BenchRedis,
  type HoldfastProcess,
  type LockClient,
} from './support';

const WAITERS = setting('waiters', 'HOLDFAST_BENCH_WAITERS', 10_000);
/**
 * One row per entry: how many of the waiters queue on each lock. Not all 10 000 on one lock by
 * default: its queue refresh is one script over every entry each second, which on the shared
 * 2-core machine ran past the server's 1 s Redis command timeout (see docs/benchmarks.md, "Resources and limits").
 */
const WAITERS_PER_LOCK = (
  process.argv.find((a) => a.startsWith('--waiters-per-lock='))?.split('=')[1] ??
  process.env.HOLDFAST_BENCH_WAITERS_PER_LOCK ??
  '1000,10'
)
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const HOLDS = setting('holds', 'HOLDFAST_BENCH_HOLDS', 10_000);
const SECONDS = setting('seconds', 'HOLDFAST_BENCH_SECONDS', 30);
/** Calls per client connection: 500, the cap per connection docs/production.md recommends (half the RST_STREAM burst). */
const PER_CONNECTION = Math.max(1, setting('per-connection', 'HOLDFAST_BENCH_PER_CONNECTION', 500));
const TTL_MS = setting('ttl-ms', 'HOLDFAST_BENCH_TTL_MS', 30_000);
const PAIR_EVERY_MS = 20;
const STALL_MS = 10;

/**
 * Acquire (try once) + Release of one lock nobody else uses, one pair every PAIR_EVERY_MS until
 * `until`; durations in ms, and the pairs that failed by status. Paced, so that the pairs do not
 * make up most of the CPU measured.
 */
async function timePairs(client: LockClient, name: string, until: number): Promise<{ durations: number[]; failed: Map<string, number> }> {
  const durations: number[] = [];
  const failed = new Map<string, number>();
  for (let next = nowMs(); next < until; next += PAIR_EVERY_MS) {
    await sleep(Math.max(0, next - nowMs()));
    const start = nowMs();
    try {
      const grant = await client.acquire({ name, ttlMs: '10000' });
      if (!grant.acquired) throw new Error(`the pair lock ${name} was not free`);
      await client.release(ReleaseRequest.fromPartial({ name, token: grant.token }));
      durations.push(nowMs() - start);
    } catch (err) {
      const what = String((err as Error).message);
      failed.set(what, (failed.get(what) ?? 0) + 1);
    }
  }
  return { durations, failed };
}

interface Window {
  /** Redis commands of 10 ms or more (SLOWLOG): each one stalled every other client of that Redis. */
  stalls: { count: number; longestMs: number; longest: string };
  rssMeanKiB: number;
  rssPeakKiB: number;
  redisBytes: number;
  serverCpu: number;
  redisCpu: number;
  redisCommands: number;
  pairs: number[];
  pairsFailed: Map<string, number>;
}

/** Samples server RSS every second for `seconds` while timing pairs; CPU and Redis counters per second. */
async function measure(server: HoldfastProcess, redis: BenchRedis, pairs: LockClient, pairName: string, seconds: number): Promise<Window> {
  await redis.client.config('SET', 'slowlog-log-slower-than', String(STALL_MS * 1000));
  await redis.client.slowlog('RESET');
  const start = { at: nowMs(), cpu: cpuSeconds(server.pid), redis: await redisCounters(redis.client) };
  const until = start.at + seconds * 1000;
  const timing = timePairs(pairs, pairName, until);
  const rss: number[] = [];
  while (nowMs() < until) {
    await sleep(Math.min(1000, Math.max(0, until - nowMs())));
    rss.push(rssKiB(server.pid));
  }
  const { durations, failed } = await timing;
  const end = { at: nowMs(), cpu: cpuSeconds(server.pid), redis: await redisCounters(redis.client) };
  const elapsed = (end.at - start.at) / 1000;
  return {
    stalls: await stalls(redis),
    rssMeanKiB: rss.reduce((a, b) => a + b, 0) / rss.length,
    rssPeakKiB: Math.max(...rss),
    redisBytes: await usedMemory(redis),
    serverCpu: (end.cpu - start.cpu) / elapsed,
    redisCpu: (end.redis.cpu - start.redis.cpu) / elapsed,
    redisCommands: (end.redis.commands - start.redis.commands) / elapsed,
    pairs: durations,
    pairsFailed: failed,
  };
}

async function stalls(redis: BenchRedis): Promise<Window['stalls']> {
  const entries = (await redis.client.slowlog('GET', 10_000)) as [number, number, number, string[]][];
  let longest = entries[0];
  for (const entry of entries) if (entry[2] > longest[2]) longest = entry;
  // A lock function is named by FCALL's first argument (holdfast_<library hash>_<operation>).
  const name = (args: string[]) => (args[0] === 'fcall' ? args[1] : args[0]);
  return { count: entries.length, longestMs: longest ? longest[2] / 1000 : 0, longest: longest ? name(longest[3]) : '' };
}

async function usedMemory(redis: BenchRedis): Promise<number> {
  return Number((await redisInfo(redis.client, 'memory')).get('used_memory'));
}

interface Row {
  what: string;
  count: number;
  idle: Window;
  loaded: Window;
  /** Calls of the load that ended before it was stopped, by status. */
  ended: [string, number][];
}

/**
 * Polls `check` once a second until it holds; fails after LOAD_TIMEOUT_MS. A check that fails
 * counts as not yet: thousands of calls that end at once (a load process exits) keep Redis busy
 * past the server's 1 s command timeout for a moment.
 */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const holds = () => check().catch((err: Error) => (log(`${what}: ${err.message}`), false));
  for (const give = nowMs() + LOAD_TIMEOUT_MS; !(await holds()); await sleep(1000)) {
    if (nowMs() > give) throw new Error(`timed out waiting for ${what}`);
  }
}

const endedCount = async (load: Load) => (await load.ended()).reduce((n, [, count]) => n + count, 0);

function log(message: string): void {
  process.stdout.write(`[bench:resources] ${message}\n`);
}

/** What one row loads the server with, and how it cleans up after itself. */
interface RowLoad {
  what: string;
  /** Resolves once the load is in place. */
  start(server: HoldfastProcess, observer: LockClient): Promise<PlacedLoad>;
}

interface PlacedLoad {
  load: Load;
  /** How many calls make up the load right now: those an overloaded Redis ended are not counted. */
  count(): Promise<number>;
  cleanup(): Promise<void>;
}

/**
 * One row on a fresh server process, so that one row's garbage does not count as the next row's
 * idle memory: warm up, measure idle, put the load in place, measure, clean up.
 */
async function measureRow(redis: BenchRedis, row: RowLoad): Promise<Row> {
  const server = await startHoldfast(redis.url);
  const observer = lockClient(server.addr);
  const pairs = lockClient(server.addr);
  const pairName = `bench-pair-${randomBytes(4).toString('hex')}`;
  let placed: PlacedLoad | undefined;
  try {
    await timePairs(pairs, pairName, nowMs() + 2000); // code paths and connections warm
    await sleep(3000);
    const idle = await measure(server, redis, pairs, pairName, Math.min(10, SECONDS));
    placed = await row.start(server, observer);
    log(`${await placed.count()} ${row.what}: in place; measuring`);
    const loaded = await measure(server, redis, pairs, pairName, SECONDS);
    // Counted when the memory was: at the end of the window.
    const count = await placed.count();
    const ended = await placed.load.ended();
    await placed.load.stop();
    await placed.cleanup();
    return { what: row.what, count, idle, loaded, ended };
  } finally {
    await placed?.load.stop();
    observer.close();
    pairs.close();
    await server.stop();
  }
}

function waitersRow(redis: BenchRedis, perLock: number, run: string): RowLoad {
  const locks = Math.max(1, Math.round(WAITERS / perLock));
  const names = Array.from({ length: locks }, (_, i) => `bench-wait-${run}-${perLock}-${i}`);
  // Queue lengths straight from Redis, in one pipeline: Inspect reads every entry of a queue.
  const queued = async () => {
    const replies = (await names.reduce((p, name) => p.zcard(lockKeys('hf', name).queue), redis.client.pipeline()).exec()) ?? [];
    return replies.reduce((n, [err, count]) => n + (err ? 0 : Number(count)), 0);
  };
  return {
    what: `queued waiters (Acquire), ${Math.round(WAITERS / locks)} per lock`,
    async start(server, observer) {
      const holders = await Promise.all(names.map((name) => observer.acquire({ name, ttlMs: '3600000' })));
      const load = await startLoad({
        kind: 'waits',
        addr: server.addr,
        names: Array.from({ length: WAITERS }, (_, i) => names[i % locks]),
        ttlMs: 0,
        perConnection: PER_CONNECTION,
      });
      await until(`${WAITERS} waiters queued`, async () => (await queued()) + (await endedCount(load)) >= WAITERS);
      return {
        load,
        count: queued,
        async cleanup() {
          await until('the queues to empty', async () => (await queued()) === 0);
          await Promise.all(names.map((name, i) => observer.release(ReleaseRequest.fromPartial({ name, token: holders[i].token }))));
        },
      };
    },
  };
}

function holdsRow(run: string): RowLoad {
  return {
    what: `Hold streams (ttl ${TTL_MS / 1000} s), one lock each`,
    async start(server) {
      const names = Array.from({ length: HOLDS }, (_, i) => `bench-hold-${run}-${i}`);
      const load = await startLoad({ kind: 'holds', addr: server.addr, names, ttlMs: TTL_MS, perConnection: PER_CONNECTION });
      return { load, count: async () => HOLDS - (await endedCount(load)), cleanup: async () => {} };
    },
  };
}

async function main(): Promise<void> {
  const machine = machineNote();
  log(
    `${WAITERS} waiters (${WAITERS_PER_LOCK.join(', ')} per lock), ${HOLDS} holds (ttl ${TTL_MS} ms), ${PER_CONNECTION} calls per connection, ${SECONDS} s windows`,
  );
  const redis = await startBenchRedis();
  await redis.client.config('SET', 'slowlog-max-len', '100000');
  const run = randomBytes(4).toString('hex');
  try {
    const rows: Row[] = [];
    for (const perLock of WAITERS_PER_LOCK) rows.push(await measureRow(redis, waitersRow(redis, perLock, run)));
    if (HOLDS > 0) rows.push(await measureRow(redis, holdsRow(run)));
    const report = summarize(machine, rows);
    process.stdout.write(`\n${report}\n`);
    log(`written to ${writeResult('resources.md', report)}`);
  } finally {
    await redis.cleanup();
  }
}

function summarize(machine: string, rows: Row[]): string {
  const kib = (n: number) => `${fixed(n, 1)} KiB`;
  const ms = (xs: number[]) => `${fixed(quantile(xs, 0.5), 2)} / ${fixed(quantile(xs, 0.99), 2)}`;
  const stalled = (w: Window) => (w.stalls.count ? `${w.stalls.count}, longest ${fixed(w.stalls.longestMs, 0)} ms (${w.stalls.longest})` : '0');
  const table = markdownTable(
    [
      'load',
      'server RSS per unit: mean; peak',
      'Redis per unit',
      'server CPU (idle)',
      'Redis CPU (idle); commands/s',
      `Redis commands over ${STALL_MS} ms`,
      'unrelated Acquire+Release p50 / p99 ms (idle)',
      'calls ended by the server',
    ],
    rows.map(({ what, count, idle, loaded, ended }) => [
      `${count} ${what}`,
      `${kib((loaded.rssMeanKiB - idle.rssMeanKiB) / count)}; ${kib((loaded.rssPeakKiB - idle.rssMeanKiB) / count)}`,
      `${fixed((loaded.redisBytes - idle.redisBytes) / count, 0)} B`,
      `${fixed(loaded.serverCpu * 1000, 0)} ms/s (${fixed(idle.serverCpu * 1000, 0)})`,
      `${fixed(loaded.redisCpu * 1000, 0)} ms/s (${fixed(idle.redisCpu * 1000, 0)}); ${fixed(loaded.redisCommands, 0)}`,
      stalled(loaded),
      `${ms(loaded.pairs)} (${ms(idle.pairs)}), n=${loaded.pairs.length}${[...loaded.pairsFailed].map(([why, n]) => `; ${n} failed: ${why}`).join('')}`,
      ended.length ? ended.map(([why, n]) => `${n} x ${why}`).join('; ') : '0',
    ]),
  );
  return [
    '# Resources per waiter and per Hold stream',
    '',
    `Each row: the server's RSS and Redis used_memory with the load in place, less the same measured on the idle server just before, ` +
      `divided by the count; RSS is the mean of one sample a second over ${SECONDS} s. Each row runs on a fresh server process. CPU is over the same window and includes the pairs. ` +
      `The load comes from ${LOAD_PROCESSES} client processes, ${PER_CONNECTION} calls per connection; one Acquire+Release pair every ${PAIR_EVERY_MS} ms ` +
      `runs on its own connection from the measuring process, on a lock nobody else uses.`,
    '',
    `Machine: ${machine}. Shared with other work. Produced by \`npm run bench:resources\` on ${new Date().toISOString().slice(0, 10)}.`,
    '',
    table,
    '',
  ].join('\n');
}

main().catch((err) => {
  process.stderr.write(`bench:resources failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
