// Benchmark of issue 10, W1: uncontended acquire+release pairs. C workers, each on its own lock
// name, loop acquire -> release through ONE client channel, against the gRPC floor server
// (bench/floor-server.ts, started here), holdfast (one process, and `--workers 2`; raw stubs, and
// the TypeScript SDK over unary calls and over its Session stream), etcd's Lock
// service, and raw SET NX PX + compare-and-delete through one ioredis connection. Rows run in
// rounds (every contender once per round) and each figure is the median over the rounds; every
// ratio is to the floor's median from the same run.
//
//   node bench/dist/bench/throughput.js [--seconds=5] [--rounds=3]
//   HOLDFAST_BENCH_CONCURRENCY=1,16,64  HOLDFAST_BENCH_ONLY=holdfast  HOLDFAST_BENCH_SERVER_NODE_ARGS=--cpu-prof
//   HOLDFAST_BENCH_SERVER_ARGS='--http-listen 127.0.0.1:0' (flags for the one-process server)
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
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
  redisCounters,
  setting,
  sleep,
  startBenchRedis,
  startFloor,
  startHoldfast,
  report,
} from './support';

const SECONDS = setting('seconds', 'HOLDFAST_BENCH_SECONDS', 5);
const ROUNDS = Math.max(1, setting('rounds', 'HOLDFAST_BENCH_ROUNDS', 3));
const CONCURRENCY = (process.env.HOLDFAST_BENCH_CONCURRENCY ?? '1,16,64')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const ONLY = process.env.HOLDFAST_BENCH_ONLY ?? '';
const SERVER_NODE_ARGS = (process.env.HOLDFAST_BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
// Server flags for the single-process holdfast rows, e.g. '--http-listen 127.0.0.1:0' to profile with metrics kept.
const SERVER_ARGS = (process.env.HOLDFAST_BENCH_SERVER_ARGS ?? '').split(' ').filter(Boolean);
const LEASE_MS = 10_000;
const FLOOR = 'gRPC floor (in-memory, FIFO)';

interface Contender {
  name: string;
  /** Processes whose CPU is the server's (holdfast, the floor, etcd). */
  serverPids: number[];
  /** Uses Redis: its CPU per pair is reported. */
  redis: boolean;
  /** One pair for worker w (of `workers`, each on its own lock). */
  setup(workers: number): { pair(w: number): Promise<void>; close(): void };
}

function grpcContender(name: string, addr: string, pids: number[], redis: boolean): Contender {
  return {
    name,
    serverPids: pids,
    redis,
    setup(workers) {
      const client = lockClient(addr);
      const run = randomBytes(4).toString('hex');
      const names = Array.from({ length: workers }, (_, w) => `bench-pairs-${run}-${w}`);
      return {
        async pair(w) {
          const grant = await client.acquire({ name: names[w], ttlMs: String(LEASE_MS), waitTimeoutMs: '1000' });
          if (!grant.acquired) throw new Error(`${name}: not acquired`);
          await client.release({ name: names[w], token: grant.token });
        },
        close: () => client.close(),
      };
    },
  };
}

/** Through the TypeScript SDK (`HoldfastClient`), over its unary calls or its one Session stream. */
function sdkContender(name: string, addr: string, pids: number[], transport: 'unary' | 'session'): Contender {
  return {
    name,
    serverPids: pids,
    redis: true,
    setup(workers) {
      const client = new HoldfastClient(addr, { transport });
      const run = randomBytes(4).toString('hex');
      const names = Array.from({ length: workers }, (_, w) => `bench-sdk-${run}-${w}`);
      return {
        async pair(w) {
          const lock = await client.acquire(names[w], { ttlMs: LEASE_MS, waitMs: 1000 });
          await lock.release();
        },
        close: () => client.close(),
      };
    },
  };
}

function etcdContender(etcd: EtcdProcess): Contender {
  return {
    name: 'etcd v3 Lock (gRPC)',
    serverPids: [etcd.pid],
    redis: false,
    setup(workers) {
      const client = etcdLockClient(etcd.addr);
      const run = randomBytes(4).toString('hex');
      const leases: Promise<string>[] = Array.from({ length: workers }, () => client.grantLease(120));
      return {
        async pair(w) {
          const key = await client.lock(`bench-pairs-${run}-${w}`, await leases[w]);
          await client.unlock(key);
        },
        close: () => client.close(),
      };
    },
  };
}

const COMPARE_AND_DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

function rawRedisContender(url: string): Contender {
  return {
    name: 'raw Redis SET NX PX + compare-and-delete (ioredis)',
    serverPids: [],
    redis: true,
    setup() {
      const client = new Redis(url, { maxRetriesPerRequest: 1 });
      client.on('error', () => {});
      client.defineCommand('compareAndDelete', { numberOfKeys: 1, lua: COMPARE_AND_DELETE });
      const run = randomBytes(4).toString('hex');
      return {
        async pair(w) {
          const key = `bench-raw-${run}-${w}`;
          const token = randomBytes(16).toString('base64url');
          if ((await client.set(key, token, 'PX', LEASE_MS, 'NX')) !== 'OK') throw new Error('raw: not acquired');
          await (client as unknown as { compareAndDelete(k: string, t: string): Promise<number> }).compareAndDelete(key, token);
        },
        close: () => client.disconnect(),
      };
    },
  };
}

interface Sample {
  pairsPerSecond: number;
  serverCpuUsPerPair: number;
  /** This process's CPU (the clients: stubs or SDK, and the loop), per pair. */
  clientCpuUsPerPair: number;
  redisCpuUsPerPair: number;
  redisCommandsPerPair: number;
  errors: number;
}

async function measure(contender: Contender, workers: number, redis: Awaited<ReturnType<typeof startBenchRedis>>): Promise<Sample> {
  const { pair, close } = contender.setup(workers);
  for (let i = 0; i < 20; i++) await Promise.all(Array.from({ length: workers }, (_, w) => pair(w)));
  const serverCpu = () => contender.serverPids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  const clientBefore = process.cpuUsage();
  const before = { server: serverCpu(), redis: cpuSeconds(redis.pid), commands: (await redisCounters(redis.client)).commands };
  const start = nowMs();
  const end = start + SECONDS * 1000;
  let pairs = 0;
  let errors = 0;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (nowMs() < end) {
        try {
          await pair(w);
          pairs++;
        } catch {
          errors++;
        }
      }
    }),
  );
  const seconds = (nowMs() - start) / 1000;
  const client = process.cpuUsage(clientBefore);
  const after = { server: serverCpu(), redis: cpuSeconds(redis.pid), commands: (await redisCounters(redis.client)).commands };
  close();
  const per = (delta: number) => (delta * 1e6) / Math.max(1, pairs);
  return {
    pairsPerSecond: pairs / seconds,
    serverCpuUsPerPair: per(after.server - before.server),
    clientCpuUsPerPair: (client.user + client.system) / Math.max(1, pairs),
    redisCpuUsPerPair: contender.redis ? per(after.redis - before.redis) : NaN,
    // Minus the two INFO calls of the measurement itself.
    redisCommandsPerPair: contender.redis ? (after.commands - before.commands - 2) / Math.max(1, pairs) : NaN,
    errors,
  };
}

async function main(): Promise<void> {
  const machine = machineNote();
  const redis = await startBenchRedis();
  const floor = await startFloor();
  const single = await startHoldfast(redis.url, SERVER_ARGS, SERVER_NODE_ARGS);
  const multi =
    ONLY && !'holdfast --workers 2'.includes(ONLY) ? undefined : await startHoldfast(redis.url, ['--workers', '2'], SERVER_NODE_ARGS).catch(() => undefined);
  const etcd = etcdInstalled() ? await startEtcd() : undefined;
  const notes: string[] = [];
  if (!etcd) notes.push('etcd is not installed (apt-get install -y etcd-server): its rows are missing.');
  if (!multi) notes.push('holdfast --workers 2 did not start (or was not asked for): its rows are missing.');
  const contenders = [
    grpcContender(FLOOR, floor.addr, [floor.pid], false),
    grpcContender('holdfast', single.addr, [single.pid], true),
    sdkContender('holdfast (TS SDK, unary)', single.addr, [single.pid], 'unary'),
    sdkContender('holdfast (TS SDK, session)', single.addr, [single.pid], 'session'),
    ...(multi ? [grpcContender('holdfast --workers 2', multi.addr, [multi.pid, ...childPids(multi.pid)], true)] : []),
    ...(etcd ? [etcdContender(etcd)] : []),
    rawRedisContender(redis.url),
  ].filter((c) => c.name === FLOOR || c.name.includes(ONLY));
  const samples = new Map<string, Sample[]>();
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const workers of CONCURRENCY) {
        for (const contender of contenders) {
          const sample = await measure(contender, workers, redis);
          const key = `${contender.name}|${workers}`;
          samples.set(key, [...(samples.get(key) ?? []), sample]);
          process.stdout.write(`[bench:throughput] round ${round}, C=${workers}, ${contender.name}: ${fixed(sample.pairsPerSecond, 0)} pairs/s\n`);
          await sleep(300);
        }
      }
    }
  } finally {
    await Promise.all([floor.stop(), single.stop(), multi?.stop(), etcd?.stop()]);
    await redis.cleanup();
  }
  const rows: string[][] = [];
  for (const workers of CONCURRENCY) {
    const floorMedian = median((samples.get(`${FLOOR}|${workers}`) ?? []).map((s) => s.pairsPerSecond));
    for (const contender of contenders) {
      const list = samples.get(`${contender.name}|${workers}`) ?? [];
      const rates = list.map((s) => s.pairsPerSecond);
      const pick = (f: (s: Sample) => number) => median(list.map(f));
      rows.push([
        contender.name,
        String(workers),
        fixed(median(rates), 0),
        `${fixed(median(rates) / floorMedian, 2)}x`,
        rates.map((r) => fixed(r, 0)).join(', '),
        fixed(
          pick((s) => s.serverCpuUsPerPair),
          0,
        ),
        fixed(
          pick((s) => s.clientCpuUsPerPair),
          0,
        ),
        contender.redis
          ? fixed(
              pick((s) => s.redisCpuUsPerPair),
              1,
            )
          : '-',
        contender.redis
          ? fixed(
              pick((s) => s.redisCommandsPerPair),
              1,
            )
          : '-',
        String(list.reduce((n, s) => n + s.errors, 0)),
      ]);
    }
  }
  const table = markdownTable(
    [
      'contender',
      'C',
      'pairs/s (median)',
      'vs floor',
      'pairs/s per round',
      'server CPU µs/pair',
      'client CPU µs/pair',
      'Redis CPU µs/pair',
      'Redis cmds/pair',
      'errors',
    ],
    rows,
  );
  report(
    'throughput.md',
    'npm run bench:throughput',
    'Throughput benchmark (W1: uncontended acquire + release)',
    `C workers, each on its own lock name, loop acquire (lease ${LEASE_MS / 1000} s) -> release through one client channel (one ioredis ` +
      `connection for raw Redis), ${SECONDS} s per row, ${ROUNDS} rounds; figures are medians over the rounds, ratios are to the floor's ` +
      `median at the same C in this run. Server CPU is from /proc/<pid>/stat of the server process(es) (10 ms ticks); client CPU is this benchmark process's own (process.cpuUsage: the clients and their loops); Redis CPU from ` +
      `/proc of redis-server; Redis commands from INFO (script-internal calls included). etcd: one lease per worker, Lock then Unlock, ` +
      `data on /dev/shm.`,
    machine,
    table,
    notes,
  );
}

/** The children of a process (the workers of `holdfast serve --workers N`), from /proc. */
function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

main().catch((err) => {
  process.stderr.write(`bench:throughput failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
