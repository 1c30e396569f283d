// Benchmark of issues 4 and 10 (W2): contended handoff on ONE lock name. W workers loop
// acquire (long wait) -> tiny critical section -> release for a fixed time, against the gRPC
// floor server (bench/floor-server.ts: in-memory, strict FIFO), holdfast on one server through one
// channel (as the floor), holdfast over two replicas, the TypeScript SDK over one Session stream,
// etcd's Lock service, and @sesamecare-oss/redlock and redis-semaphore's Mutex against the same
// redis-server. All workers live in this process, so one clock times grants and releases. Rows
// run in rounds; each figure is the round with the median handoffs/s, and ratios are to the
// floor's in this run.
//
//   node bench/dist/bench/contention.js [--seconds=5] [--rounds=3] [--workers=8,32 via HOLDFAST_BENCH_WORKERS]
import { randomBytes } from 'node:crypto';
import { Redlock } from '@sesamecare-oss/redlock';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import { HoldfastClient } from '../clients/ts/index';
import { etcdInstalled, etcdLockClient, startEtcd, type EtcdProcess } from './etcd';
import {
  cpuSeconds,
  fixed,
  lockClient,
  machineNote,
  markdownTable,
  median,
  nowMs,
  quantile,
  redisCounters,
  setting,
  sleep,
  startBenchRedis,
  report,
  startFloor,
  startHoldfast,
} from './support';

const SECONDS = setting('seconds', 'HOLDFAST_BENCH_SECONDS', 5);
const ROUNDS = Math.max(1, setting('rounds', 'HOLDFAST_BENCH_ROUNDS', 3));
const WORKER_COUNTS = (process.env.HOLDFAST_BENCH_WORKERS ?? '8,32')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
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
  /** The server processes whose CPU is reported (none for the client libraries). */
  serverPids: number[];
  /** Builds the workers' acquire functions for `lock`; close() drops their connections. */
  setup(lock: string, workers: number): { acquires: Acquire[]; close(): Promise<void> };
}

const FLOOR = 'gRPC floor (in-memory, FIFO)';

/** holdfast.v1.LockService clients: one shared channel per server, or one channel per worker. */
function lockService(library: string, config: string, servers: { addr: string; pid: number }[], channelPerWorker: boolean): Contender {
  return {
    library,
    config,
    serverPids: servers.map((s) => s.pid),
    setup(lock, workers) {
      const shared = servers.map((s) => lockClient(s.addr));
      const clients = Array.from({ length: workers }, (_, i) => (channelPerWorker ? lockClient(servers[i % servers.length].addr) : shared[i % shared.length]));
      const acquires = clients.map(
        (c): Acquire =>
          async () => {
            const grant = await c.acquire({ name: lock, ttlMs: String(LEASE_MS), waitTimeoutMs: String(WAIT_MS) }, WAIT_MS + 5000);
            return grant.acquired ? () => c.release({ name: lock, token: grant.token }) : null;
          },
      );
      return { acquires, close: async () => new Set([...shared, ...clients]).forEach((c) => c.close()) };
    },
  };
}

/** The TypeScript SDK (`HoldfastClient`) on one server, over one Session stream shared by the workers. */
function sdkSession(server: { addr: string; pid: number }): Contender {
  return {
    library: 'holdfast (TS SDK, session)',
    config: '1 server, one session',
    serverPids: [server.pid],
    setup(lock, workers) {
      const client = new HoldfastClient(server.addr, { transport: 'session' });
      const acquire: Acquire = async () => {
        const grant = await client.acquire(lock, { ttlMs: LEASE_MS, waitMs: WAIT_MS }).catch(() => null);
        return grant ? () => grant.release() : null;
      };
      return { acquires: Array.from({ length: workers }, () => acquire), close: async () => client.close() };
    },
  };
}

function etcd(server: EtcdProcess): Contender {
  return {
    library: 'etcd v3 Lock (gRPC)',
    config: 'one channel, a lease per worker',
    serverPids: [server.pid],
    setup(lock, workers) {
      const client = etcdLockClient(server.addr);
      const leases = Array.from({ length: workers }, () => client.grantLease(120));
      const acquires = leases.map(
        (lease): Acquire =>
          async () => {
            const key = await client.lock(lock, await lease);
            return () => client.unlock(key);
          },
      );
      return { acquires, close: async () => client.close() };
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
    serverPids: [],
    setup(lock, workers) {
      const clients = redisClients(url, workers);
      // retryCount -1 (unbounded): the workload waits as long as it takes, like the others.
      const locks = clients.map((c) => new Redlock([c], { retryCount: -1, ...settings }));
      const acquires = locks.map(
        (r): Acquire =>
          async () => {
            const held = await r.acquire([lock], LEASE_MS);
            return () => held.release();
          },
      );
      return { acquires, close: async () => clients.forEach((c) => c.disconnect()) };
    },
  };
}

function semaphore(url: string, config: string, retryInterval?: number): Contender {
  return {
    library: 'redis-semaphore Mutex',
    config,
    serverPids: [],
    setup(lock, workers) {
      const clients = redisClients(url, workers);
      const acquires = clients.map(
        (c): Acquire =>
          async () => {
            const mutex = new Mutex(c, lock, { acquireTimeout: WAIT_MS, lockTimeout: LEASE_MS, ...(retryInterval ? { retryInterval } : {}) });
            await mutex.acquire();
            return () => mutex.release();
          },
      );
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
  /** The commands behind one grant, most frequent first ("zrange 9.0, hget 6.0, fcall 2.0, ..."). */
  commandsPerGrant: string;
  redisCpuMsPerSecond: number;
  serverCpuMsPerSecond: number;
}

async function measure(contender: Contender, workers: number, redis: Awaited<ReturnType<typeof startBenchRedis>>): Promise<Outcome> {
  const { serverPids } = contender;
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
  const before = { redis: await redisCounters(redis.client), redisCpu: cpuSeconds(redis.pid), server: serverCpu() };
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
  const after = { redis: await redisCounters(redis.client), redisCpu: cpuSeconds(redis.pid), server: serverCpu(), at: nowMs() };
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
  outcome.redisCpuMsPerSecond = ((after.redisCpu - before.redisCpu) * 1000) / seconds; // /proc/<redis pid>/stat
  outcome.serverCpuMsPerSecond = ((after.server - before.server) * 1000) / seconds;
  await close();
  return outcome;
}

/** Grants to a worker other than the one that released last, per second. */
function handoffsPerSecond(o: Outcome): number {
  return (o.grants.reduce((a, b) => a + b, 0) - o.regrants) / SECONDS;
}

function row(contender: Contender, workers: number, o: Outcome, floor: Outcome | undefined, rounds: Outcome[]): string[] {
  const total = o.grants.reduce((a, b) => a + b, 0);
  const min = Math.min(...o.grants);
  const max = Math.max(...o.grants);
  const spread = min > 0 ? `${fixed((max / min - 1) * 100, 0)}%` : 'inf';
  const ms = (values: number[], q: number) => fixed(quantile(values, q), values.length && quantile(values, q) < 10 ? 2 : 1);
  const ratio = (a: number, b: number | undefined) => (b ? `${fixed(a / b, 2)}x` : '-');
  return [
    contender.library,
    contender.config,
    String(workers),
    fixed(total / SECONDS, 0),
    fixed(handoffsPerSecond(o), 0),
    ratio(handoffsPerSecond(o), floor && handoffsPerSecond(floor)),
    rounds.map((r) => fixed(handoffsPerSecond(r), 0)).join(', '),
    `${min} / ${max}`,
    spread,
    `${fixed((o.regrants / Math.max(1, total)) * 100, 0)}%`,
    `${ms(o.waits, 0.5)} / ${ms(o.waits, 0.99)} / ${fixed(Math.max(...o.waits), 0)}`,
    ratio(quantile(o.waits, 0.99), floor && quantile(floor.waits, 0.99)),
    `${ms(o.fromReply, 0.5)} / ${ms(o.fromReply, 0.99)}`,
    `${ms(o.fromCall, 0.5)} / ${ms(o.fromCall, 0.99)}`,
    `${fixed(o.redisCommandsPerSecond, 0)} (${fixed(o.redisCpuMsPerSecond, 0)} ms/s)`,
    contender.library === 'holdfast' ? fixed((o.redisCpuMsPerSecond * 1000) / Math.max(1, handoffsPerSecond(o)), 0) : '-',
    contender.serverPids.length ? `${fixed(o.serverCpuMsPerSecond, 0)} ms/s` : '-',
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
  const floor = await startFloor();
  const replicas = [await startHoldfast(redis.url, [], SERVER_NODE_ARGS), await startHoldfast(redis.url, [], SERVER_NODE_ARGS)];
  const etcdServer = etcdInstalled() ? await startEtcd() : undefined;
  const rows: string[][] = [];
  const notes: string[] = [];
  if (!etcdServer) notes.push('etcd is not installed (apt-get install -y etcd-server): its rows are missing.');
  try {
    const contenders = [
      lockService(FLOOR, '1 server, one channel', [floor], false),
      lockService('holdfast', '1 server, one channel', [replicas[0]], false),
      lockService('holdfast', '2 replicas, a channel per worker', replicas, true),
      sdkSession(replicas[0]),
      ...(etcdServer ? [etcd(etcdServer)] : []),
      redlock(redis.url, 'defaults (retryDelay 200, retryJitter 100)', {}),
      redlock(redis.url, 'tuned (retryDelay 10, retryJitter 5)', { retryDelay: 10, retryJitter: 5 }),
      semaphore(redis.url, 'defaults (retryInterval 10)'),
      semaphore(redis.url, 'tuned (retryInterval 1)', 1),
    ].filter((c) => c.library === FLOOR || c.library.includes(ONLY));
    // A short warm-up so JIT and connection set-up stay out of the first measurement.
    for (const contender of contenders.slice(0, 3)) {
      const { acquires, close } = contender.setup(`bench-warm-${randomBytes(4).toString('hex')}`, 4);
      for (let i = 0; i < 50; i++) for (const a of acquires) await (await a())?.();
      await close();
    }
    notes.push(await roundTrips(replicas[0].addr, redis.client));
    const outcomes = new Map<string, Outcome[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const workers of WORKER_COUNTS) {
        for (const contender of contenders) {
          process.stdout.write(`[bench:contention] round ${round}: ${contender.library}, ${contender.config}, ${workers} workers, ${SECONDS} s ... `);
          const outcome = await measure(contender, workers, redis);
          const key = `${contender.library}|${contender.config}|${workers}`;
          outcomes.set(key, [...(outcomes.get(key) ?? []), outcome]);
          process.stdout.write(`${fixed(handoffsPerSecond(outcome), 0)} handoffs/s, wait p99 ${fixed(quantile(outcome.waits, 0.99), 1)} ms\n`);
          await sleep(500);
        }
      }
    }
    // Each row is the round with the median handoffs/s, so its columns belong together.
    const medianOf = (list: Outcome[]) => {
      const target = median(list.map(handoffsPerSecond));
      return list.reduce((best, o) => (Math.abs(handoffsPerSecond(o) - target) < Math.abs(handoffsPerSecond(best) - target) ? o : best));
    };
    for (const workers of WORKER_COUNTS) {
      const floorRounds = outcomes.get(`${FLOOR}|1 server, one channel|${workers}`);
      const floorOutcome = floorRounds && medianOf(floorRounds);
      for (const contender of contenders) {
        const list = outcomes.get(`${contender.library}|${contender.config}|${workers}`) ?? [];
        const outcome = medianOf(list);
        rows.push(row(contender, workers, outcome, floorOutcome, list));
        if (contender.library === 'holdfast')
          notes.push(
            `holdfast, ${contender.config}, ${workers} workers: Redis commands per grant (INFO commandstats, script-internal included): ${outcome.commandsPerGrant}.`,
          );
        const beforeReply = list.reduce((n, o) => n + o.grantBeforeReply, 0);
        if (beforeReply > 0) {
          notes.push(
            `${contender.library} ${contender.config}, ${workers} workers: ${beforeReply} of ${list.reduce((n, o) => n + o.fromReply.length, 0)} grants arrived before the previous holder's Release reply (counted as 0 in "from reply").`,
          );
        }
        for (const e of list.flatMap((o) => o.errorSample).slice(0, 3)) notes.push(`${contender.library} ${contender.config}, ${workers} workers: error: ${e}`);
      }
    }
  } finally {
    await Promise.all([floor.stop(), etcdServer?.stop(), ...replicas.map((r) => r.stop())]);
    await redis.cleanup();
  }
  const table = markdownTable(
    [
      'library',
      'config',
      'workers',
      'grants/s',
      'handoffs/s to another worker',
      'vs floor',
      'handoffs/s per round',
      'grants per worker min / max',
      'spread (max/min - 1)',
      'grants to the worker that released last',
      'wait p50 / p99 / max ms',
      'wait p99 vs floor',
      "release→other worker's grant p50 / p99 ms (from release reply)",
      "release→other worker's grant p50 / p99 ms (from release call)",
      'Redis cmds/s (redis CPU)',
      'Redis CPU µs per handoff',
      'server CPU',
      'errors',
    ],
    rows,
  );
  report(
    'contention.md',
    'npm run bench:contention',
    'Contention benchmark (W2: one lock, N workers)',
    `One lock name; each worker loops acquire (wait up to ${WAIT_MS / 1000} s, lease ${LEASE_MS / 1000} s) -> empty critical section -> release ` +
      `for ${SECONDS} s per row, ${ROUNDS} rounds (every row once per round); each row shows the round with the median handoffs/s, ` +
      `"vs floor" compares it with the floor's median round of the same run. The floor and "holdfast, 1 server" share one gRPC channel ` +
      `among all workers; "2 replicas" gives each worker its own channel, alternating between two holdfast servers (so half the ` +
      `handoffs cross servers and take the claim path); etcd runs its v3 Lock service (one lease per worker, data on /dev/shm); ` +
      `the libraries use one ioredis connection per worker; all Redis users share one redis-server. ` +
      `Workers run in one Node process, so grants and releases are timed on one clock. "release→other worker's grant" is the time from the previous ` +
      `holder's release (its reply, or the moment it called release) to the next grant arriving at a different worker; a worker that re-takes ` +
      `the lock it just released (barging) is counted in grants/s but not in handoffs/s to another worker. ` +
      `For the polling libraries that latency is a selected sample: another worker wins only when its retry happens to land between the ` +
      `release and the releaser's own re-acquire, so the waits (p99, max) and the spread show their cost, not release→grant. ` +
      `Both libraries run with unbounded retries (redlock retryCount -1, redis-semaphore acquireTimeout ${WAIT_MS} ms), otherwise equal to their defaults unless tuned. ` +
      `Redis commands include those run inside Lua scripts; Redis CPU per handoff is redis-server's CPU (INFO) over handoffs.`,
    machine,
    table,
    notes,
  );
}

main().catch((err) => {
  process.stderr.write(`bench:contention failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
