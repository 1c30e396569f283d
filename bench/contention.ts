// Benchmark of issue 4: contended handoff on ONE lock name. W workers loop
// acquire (long wait) -> tiny critical section -> release for a fixed time, over two holdfast
// replicas on one Redis, then the same workload with @sesamecare-oss/redlock and
// redis-semaphore's Mutex against the same redis-server. All workers live in this process
// (separate gRPC channels / Redis connections each), so one clock times grants and releases.
//
//   node bench/dist/bench/contention.js [--seconds=10] [--workers=8,32 via HOLDFAST_BENCH_WORKERS]
import { randomBytes } from 'node:crypto';
import { Redlock } from '@sesamecare-oss/redlock';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import {
  cpuSeconds,
  fixed,
  lockClient,
  machineNote,
  markdownTable,
  nowMs,
  quantile,
  redisCounters,
  setting,
  sleep,
  startBenchRedis,
  startHoldfast,
  writeResult,
  type HoldfastProcess,
} from './support';

const SECONDS = setting('seconds', 'HOLDFAST_BENCH_SECONDS', 10);
const WORKER_COUNTS = (process.env.HOLDFAST_BENCH_WORKERS ?? '8,32').split(',').map(Number).filter((n) => n > 0);
/** Run only the contenders whose library name contains this, e.g. "holdfast". */
const ONLY = process.env.HOLDFAST_BENCH_ONLY ?? '';
/** Extra node flags for the server processes, e.g. "--cpu-prof" to profile them. */
const SERVER_NODE_ARGS = (process.env.HOLDFAST_BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
const LEASE_MS = 10_000;
const WAIT_MS = 60_000;

/** One worker's way to take the lock: resolves with its release, or null when not granted. */
type Acquire = () => Promise<(() => Promise<unknown>) | null>;

interface Contender {
  library: string;
  config: string;
  /** Builds the workers' acquire functions for `lock`; close() drops their connections. */
  setup(lock: string, workers: number): { acquires: Acquire[]; close(): Promise<void> };
}

function holdfast(replicas: HoldfastProcess[]): Contender {
  return {
    library: 'holdfast',
    config: `2 replicas, wait_timeout_ms ${WAIT_MS}`,
    setup(lock, workers) {
      const clients = Array.from({ length: workers }, (_, i) => lockClient(replicas[i % replicas.length].addr));
      const acquires = clients.map((c): Acquire => async () => {
        const grant = await c.acquire({ name: lock, ttlMs: String(LEASE_MS), waitTimeoutMs: String(WAIT_MS) }, WAIT_MS + 5000);
        return grant.acquired ? () => c.release({ name: lock, token: grant.token }) : null;
      });
      return { acquires, close: async () => clients.forEach((c) => c.close()) };
    },
  };
}

function redisClients(url: string, workers: number): Redis[] {
  return Array.from({ length: workers }, () => {
    const client = new Redis(url, { maxRetriesPerRequest: 1 });
    client.on('error', () => {});
    return client;
  });
}

function redlock(url: string, config: string, settings: { retryDelay?: number; retryJitter?: number }): Contender {
  return {
    library: '@sesamecare-oss/redlock',
    config,
    setup(lock, workers) {
      const clients = redisClients(url, workers);
      // retryCount -1 (unbounded): the workload waits as long as it takes, like the others.
      const locks = clients.map((c) => new Redlock([c], { retryCount: -1, ...settings }));
      const acquires = locks.map((r): Acquire => async () => {
        const held = await r.acquire([lock], LEASE_MS);
        return () => held.release();
      });
      return { acquires, close: async () => clients.forEach((c) => c.disconnect()) };
    },
  };
}

function semaphore(url: string, config: string, retryInterval?: number): Contender {
  return {
    library: 'redis-semaphore Mutex',
    config,
    setup(lock, workers) {
      const clients = redisClients(url, workers);
      const acquires = clients.map((c): Acquire => async () => {
        const mutex = new Mutex(c, lock, { acquireTimeout: WAIT_MS, lockTimeout: LEASE_MS, ...(retryInterval ? { retryInterval } : {}) });
        await mutex.acquire();
        return () => mutex.release();
      });
      return { acquires, close: async () => clients.forEach((c) => c.disconnect()) };
    },
  };
}

interface Outcome {
  grants: number[];
  waits: number[];
  /** Next grant minus the previous holder's Release reply (0 when the grant arrived first). */
  fromReply: number[];
  grantBeforeReply: number;
  /** Next grant minus the moment the previous holder called release. */
  fromCall: number[];
  /** Grants that went back to the worker that released last (barging). */
  regrants: number;
  errors: number;
  errorSample: string[];
  overlaps: number;
  redisCommandsPerSecond: number;
  /** The commands behind one grant, most frequent first ("evalsha 3.0, zrange 12.1, ..."). */
  commandsPerGrant: string;
  redisCpuMsPerSecond: number;
  serverCpuMsPerSecond: number;
}

async function measure(contender: Contender, workers: number, redis: Awaited<ReturnType<typeof startBenchRedis>>, serverPids: number[]): Promise<Outcome> {
  const lock = `bench-contention-${randomBytes(4).toString('hex')}`;
  const { acquires, close } = contender.setup(lock, workers);
  const outcome: Outcome = {
    grants: acquires.map(() => 0),
    waits: [],
    fromReply: [],
    grantBeforeReply: 0,
    fromCall: [],
    regrants: 0,
    errors: 0,
    errorSample: [],
    overlaps: 0,
    redisCommandsPerSecond: 0,
    commandsPerGrant: '',
    redisCpuMsPerSecond: 0,
    serverCpuMsPerSecond: 0,
  };
  let holder = -1;
  let lastHolder = -1;
  let lastRelease: { calledAt: number; repliedAt?: number } | undefined;
  const serverCpu = () => serverPids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  const before = { redis: await redisCounters(redis.client), server: serverCpu() };
  const start = nowMs();
  const end = start + SECONDS * 1000;

  const loop = async (w: number) => {
    while (nowMs() < end) {
      const askedAt = nowMs();
      let release: (() => Promise<unknown>) | null;
      try {
        release = await acquires[w]();
      } catch (err) {
        outcome.errors++;
        if (outcome.errorSample.length < 3) outcome.errorSample.push(String((err as Error).message));
        continue;
      }
      const grantedAt = nowMs();
      if (!release) {
        outcome.errors++;
        continue;
      }
      if (holder !== -1) outcome.overlaps++;
      holder = w;
      if (grantedAt <= end) {
        outcome.grants[w]++;
        outcome.waits.push(grantedAt - askedAt);
        if (lastHolder === w) outcome.regrants++;
        // Only a grant to another worker is a handoff: a worker re-taking the lock it just released
        // (barging) has no wake-up to measure.
        if (lastRelease && lastHolder !== w) {
          outcome.fromCall.push(grantedAt - lastRelease.calledAt);
          if (lastRelease.repliedAt === undefined) outcome.grantBeforeReply++;
          outcome.fromReply.push(Math.max(0, grantedAt - (lastRelease.repliedAt ?? grantedAt)));
        }
      }
      await Promise.resolve(); // the critical section
      holder = -1;
      lastHolder = w;
      const record: { calledAt: number; repliedAt?: number } = { calledAt: nowMs() };
      lastRelease = record;
      try {
        await release();
      } catch (err) {
        outcome.errors++;
        if (outcome.errorSample.length < 3) outcome.errorSample.push(`release: ${(err as Error).message}`);
      }
      record.repliedAt = nowMs();
    }
  };
  const running = Promise.all(acquires.map((_, w) => loop(w)));
  await sleep(SECONDS * 1000);
  const after = { redis: await redisCounters(redis.client), server: serverCpu(), at: nowMs() };
  await running; // the workers still queued at the end get their grant and release it
  const seconds = (after.at - start) / 1000;
  outcome.redisCommandsPerSecond = (after.redis.commands - before.redis.commands) / seconds;
  const grantsInWindow = Math.max(1, outcome.waits.length);
  outcome.commandsPerGrant = [...after.redis.calls]
    .map(([command, calls]) => [command, (calls - (before.redis.calls.get(command) ?? 0)) / grantsInWindow] as const)
    .filter(([command, n]) => n >= 0.05 && command !== 'info')
    .sort((a, b) => b[1] - a[1])
    .map(([command, n]) => `${command} ${fixed(n, 1)}`)
    .join(', ');
  outcome.redisCpuMsPerSecond = ((after.redis.cpu - before.redis.cpu) * 1000) / seconds;
  outcome.serverCpuMsPerSecond = ((after.server - before.server) * 1000) / seconds;
  await close();
  return outcome;
}

function row(contender: Contender, workers: number, o: Outcome, withServerCpu: boolean): string[] {
  const total = o.grants.reduce((a, b) => a + b, 0);
  const min = Math.min(...o.grants);
  const max = Math.max(...o.grants);
  const spread = min > 0 ? `${fixed((max / min - 1) * 100, 0)}%` : 'inf';
  const ms = (values: number[], q: number) => fixed(quantile(values, q), values.length && quantile(values, q) < 10 ? 2 : 1);
  return [
    contender.library,
    contender.config,
    String(workers),
    fixed(total / SECONDS, 0),
    fixed((total - o.regrants) / SECONDS, 0),
    `${min} / ${max}`,
    spread,
    `${fixed((o.regrants / Math.max(1, total)) * 100, 0)}%`,
    `${ms(o.waits, 0.5)} / ${ms(o.waits, 0.99)} / ${fixed(Math.max(...o.waits), 0)}`,
    `${ms(o.fromReply, 0.5)} / ${ms(o.fromReply, 0.99)}`,
    `${ms(o.fromCall, 0.5)} / ${ms(o.fromCall, 0.99)}`,
    `${fixed(o.redisCommandsPerSecond, 0)} (${fixed(o.redisCpuMsPerSecond, 0)} ms/s)`,
    withServerCpu ? `${fixed(o.serverCpuMsPerSecond, 0)} ms/s` : '-',
    `${o.errors}${o.overlaps ? `, ${o.overlaps} OVERLAPS` : ''}`,
  ];
}

/** What one hop costs on this machine right now: the floor under any handoff. */
async function roundTrips(addr: string, client: Redis): Promise<string> {
  const grpc = lockClient(addr);
  const rpc: number[] = [];
  const ping: number[] = [];
  for (let i = 0; i < 300; i++) {
    let t = nowMs();
    await grpc.inspect({ name: 'bench-round-trip' });
    rpc.push(nowMs() - t);
    t = nowMs();
    await client.ping();
    ping.push(nowMs() - t);
  }
  grpc.close();
  return (
    `Round trips on this machine during the run (300 sequential, idle lock): Inspect RPC (client -> holdfast -> one Lua script -> back) ` +
    `p50 ${fixed(quantile(rpc, 0.5), 2)} / p99 ${fixed(quantile(rpc, 0.99), 2)} ms; Redis PING p50 ${fixed(quantile(ping, 0.5), 2)} / p99 ${fixed(quantile(ping, 0.99), 2)} ms.`
  );
}

async function main(): Promise<void> {
  const machine = machineNote();
  const redis = await startBenchRedis();
  const replicas = [await startHoldfast(redis.url, [], SERVER_NODE_ARGS), await startHoldfast(redis.url, [], SERVER_NODE_ARGS)];
  const rows: string[][] = [];
  const notes: string[] = [];
  try {
    const contenders = [
      holdfast(replicas),
      redlock(redis.url, 'defaults (retryDelay 200, retryJitter 100)', {}),
      redlock(redis.url, 'tuned (retryDelay 10, retryJitter 5)', { retryDelay: 10, retryJitter: 5 }),
      semaphore(redis.url, 'defaults (retryInterval 10)'),
      semaphore(redis.url, 'tuned (retryInterval 1)', 1),
    ].filter((c) => c.library.includes(ONLY));
    // A short warm-up so JIT and connection set-up stay out of the first measurement.
    {
      const { acquires, close } = holdfast(replicas).setup(`bench-warm-${randomBytes(4).toString('hex')}`, 4);
      for (let i = 0; i < 50; i++) for (const a of acquires) await (await a())?.();
      await close();
    }
    notes.push(await roundTrips(replicas[0].addr, redis.client));
    for (const workers of WORKER_COUNTS) {
      for (const contender of contenders) {
        process.stdout.write(`[bench:contention] ${contender.library}, ${contender.config}, ${workers} workers, ${SECONDS} s ... `);
        const outcome = await measure(contender, workers, redis, contender.library === 'holdfast' ? replicas.map((r) => r.pid) : []);
        const r = row(contender, workers, outcome, contender.library === 'holdfast');
        rows.push(r);
        process.stdout.write(`${r[3]} grants/s, ${r[4]} to another worker, spread ${r[6]}, wait p99 ${r[8].split(' / ')[1]} ms\n`);
        if (contender.library === 'holdfast') notes.push(`holdfast, ${workers} workers: Redis commands per grant (INFO commandstats, script-internal included): ${outcome.commandsPerGrant}.`);
        if (outcome.grantBeforeReply > 0) {
          notes.push(`${contender.library} ${contender.config}, ${workers} workers: ${outcome.grantBeforeReply} of ${outcome.fromReply.length} grants arrived before the previous holder's Release reply (counted as 0 in "from reply").`);
        }
        for (const e of outcome.errorSample) notes.push(`${contender.library} ${contender.config}, ${workers} workers: error: ${e}`);
        await sleep(1000);
      }
    }
  } finally {
    await Promise.all(replicas.map((r) => r.stop()));
    await redis.cleanup();
  }
  const table = markdownTable(
    [
      'library',
      'config',
      'workers',
      'grants/s',
      'handoffs/s to another worker',
      'grants per worker min / max',
      'spread (max/min - 1)',
      'grants to the worker that released last',
      'wait p50 / p99 / max ms',
      'release→other worker\'s grant p50 / p99 ms (from release reply)',
      'release→other worker\'s grant p50 / p99 ms (from release call)',
      'Redis cmds/s (redis CPU)',
      'holdfast servers CPU',
      'errors',
    ],
    rows,
  );
  const report = [
    '# Contention benchmark',
    '',
    `One lock name; each worker loops acquire (wait up to ${WAIT_MS / 1000} s, lease ${LEASE_MS / 1000} s) -> empty critical section -> release ` +
      `for ${SECONDS} s per row. holdfast workers alternate between two server replicas (one gRPC channel per worker); ` +
      `the libraries use one ioredis connection per worker; everything talks to one redis-server. ` +
      `Workers run in one Node process, so grants and releases are timed on one clock. "release→other worker's grant" is the time from the previous ` +
      `holder's release (its reply, or the moment it called release) to the next grant arriving at a different worker; a worker that re-takes ` +
      `the lock it just released (barging) is counted in grants/s but not in handoffs/s to another worker. ` +
      `For the polling libraries that latency is a selected sample: another worker wins only when its retry happens to land between the ` +
      `release and the releaser's own re-acquire, so the waits (p99, max) and the spread show their cost, not release→grant. ` +
      `Both libraries run with unbounded retries (redlock retryCount -1, redis-semaphore acquireTimeout ${WAIT_MS} ms), otherwise equal to their defaults unless tuned. ` +
      `Redis commands include those run inside Lua scripts.`,
    '',
    `Machine: ${machine}. Shared with other work, so the figures are noisy. Produced by \`npm run bench:contention\` on ${new Date().toISOString().slice(0, 10)}.`,
    '',
    table,
    ...(notes.length ? ['', ...notes.map((n) => `- ${n}`)] : []),
    '',
  ].join('\n');
  process.stdout.write(`\n${report}\n`);
  process.stdout.write(`[bench:contention] written to ${writeResult('contention.md', report)}\n`);
}

main().catch((err) => {
  process.stderr.write(`bench:contention failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
