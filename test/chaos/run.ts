// One chaos run: start Redis, the replicas, the storage service and the workers; inject faults on
// a seeded schedule, one at a time; stop the workers; let every lease run out; ask Inspect what is
// left; check the history.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HoldfastClient } from '../../clients/ts/index';
import type { Anomaly } from './anomaly';
import { check } from './checker';
import { monoNow, type ClockSample } from './clock';
import { RedisNode, Replica, startStorage, WorkerSlot, type StorageProcess } from './cluster';
import type { LockSpec, StorageDump, Transport } from './events';
import { faultOrder, strike, type Fault, type FaultClass, type FaultTargets } from './faults';
import { readHistory, type Op } from './history';
import { MASTER_NAME, startTestSentinels, type TestSentinels } from '../support/sentinel';
import { Random } from './random';
import { vouchFor } from '../../src/redis/vouch';

export interface ChaosOptions {
  label: string;
  durationS: number;
  seed: number;
  ttlMs: number;
  /** Client processes. */
  workers: number;
  /** Concurrent operations per client process. */
  loops: number;
  replicas: number;
  faults: FaultClass[];
  /** Strike every class in `faults` at least once, even past the duration (a slow machine). */
  everyFaultOnce?: boolean;
  /** The servers' --release-on-disconnect: the negative control's broken configuration. */
  releaseOnDisconnect: boolean;
  /** How many workers are broken clients that ignore their lease and skip the fence. */
  careless: number;
  /** The servers' --keepalive-time-ms and --keepalive-timeout-ms. */
  keepaliveMs: number;
  /** More server options (e.g. --failover-quarantine). */
  serverArgs?: string[];
  /** One redis-server (default), or a master, two replicas and three Sentinels. */
  topology?: 'single' | 'sentinel';
  /** More redis-server options for the Sentinel deployment's data nodes. */
  nodeArgs?: string[];
  /** How many plain exclusive locks (default 3; besides one read-write lock and two semaphores). */
  exclusiveLocks?: number;
  /** Critical sections scale with this (ms; default the ttl), and this share of holds is long (default 0.1). */
  thinkScaleMs?: number;
  longShare?: number;
  /** The fault classes holdfast claims safety for in this configuration; default: FAULT_CLASSES'. */
  safe?: FaultClass[];
  keepLogs?: boolean;
  log?: (line: string) => void;
}

export interface ChaosResult {
  options: ChaosOptions;
  locks: LockSpec[];
  ops: Op[];
  anomalies: Anomaly[];
  faults: Fault[];
  storage: StorageDump;
  /** Start of the workload, end of the fault schedule, end of the run (monotonic ms). */
  t0: number;
  stoppedAt: number;
  endAt: number;
  clock: ClockSample[];
  serverErrors: string[];
  workerErrors: string[];
  crashed: string[];
  logDir: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

function lockSpecs(run: string, exclusive: number): LockSpec[] {
  return [
    ...Array.from({ length: exclusive }, (_, i): LockSpec => ({ name: `${run}/ex-${i}`, type: 'exclusive', limit: 1 })),
    { name: `${run}/rw-0`, type: 'rw', limit: 1 },
    { name: `${run}/sem-2`, type: 'semaphore', limit: 2 },
    { name: `${run}/sem-3`, type: 'semaphore', limit: 3 },
  ];
}

function fetchDump(port: number): Promise<StorageDump> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/dump' }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve(JSON.parse(text) as StorageDump));
    }).on('error', reject);
  });
}

/** Inspect every lock through a replica, retrying while a replica is still coming back. */
async function inspectAll(addr: string, locks: LockSpec[]) {
  const client = new HoldfastClient(addr, { callTimeoutMs: 3_000 });
  try {
    return await Promise.all(
      locks.map(async (lock) => {
        for (let attempt = 0; ; attempt++) {
          try {
            const info = await client.inspect(lock.name);
            return { lock: lock.name, holders: info.holders.map((h) => h.owner), waiters: info.waiters };
          } catch (err) {
            if (attempt >= 10) throw err;
            await sleep(500);
          }
        }
      }),
    );
  } finally {
    client.close();
  }
}

interface Processes {
  redis?: RedisNode;
  sentinels?: TestSentinels;
  replicas: Replica[];
  storage?: StorageProcess;
  slots: WorkerSlot[];
}

/**
 * The servers' lease cap for a run: the default safety with a cap sized to the run's leases, so a
 * quarantine after a Redis restart lasts seconds, not the default 61 s (a cap is no safety flag).
 */
export function leaseCapArgs(ttlMs: number): string[] {
  return ['--default-ttl-ms', String(ttlMs), '--max-ttl-ms', String(Math.max(2 * ttlMs, 2000))];
}

async function stopAll(p: Processes): Promise<void> {
  await Promise.all(p.slots.map((s) => s.close()));
  await Promise.all(p.replicas.map((r) => r.close()));
  p.storage?.child.kill('SIGKILL');
  await p.redis?.stop();
  await p.sentinels?.cleanup();
}

/** Redis, the replicas (each through its own proxy to Redis), the storage service and the worker slots; stopped again if one fails to start. */
async function startAll(options: ChaosOptions, runDir: string): Promise<Processes> {
  const p: Processes = { replicas: [], slots: [] };
  try {
    let redis: string | string[];
    if (options.topology === 'sentinel') {
      p.sentinels = await startTestSentinels({ nodeArgs: options.nodeArgs });
      redis = ['--redis-sentinels', p.sentinels.sentinelAddrs.join(','), '--redis-master', MASTER_NAME];
    } else {
      p.redis = new RedisNode(join(runDir, 'redis'));
      await p.redis.start();
      await vouchFor({ url: p.redis.url }); // new to holdfast: the run starts granting at once
      redis = p.redis.url;
    }
    const serverArgs = ['--keepalive-time-ms', String(options.keepaliveMs), '--keepalive-timeout-ms', String(options.keepaliveMs)];
    if (options.releaseOnDisconnect) serverArgs.push('--release-on-disconnect');
    serverArgs.push(...leaseCapArgs(options.ttlMs), ...(options.serverArgs ?? []));
    for (let i = 0; i < options.replicas; i++) p.replicas.push(await Replica.create(i, redis, serverArgs));
    p.storage = await startStorage();
    for (let i = 0; i < options.workers; i++) p.slots.push(await WorkerSlot.create(i, p.replicas));
    return p;
  } catch (err) {
    await stopAll(p);
    throw err;
  }
}

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const log = options.log ?? (() => {});
  const random = new Random(options.seed);
  const runDir = mkdtempSync(join(tmpdir(), 'holdfast-chaos-'));
  const logDir = join(runDir, 'logs');
  mkdirSync(logDir);
  const locks = lockSpecs(`chaos-${options.seed}-${process.pid}-${Date.now().toString(36)}`, options.exclusiveLocks ?? 3);
  const p = await startAll(options, runDir);
  const { replicas, slots } = p;
  const storage = p.storage!;
  const clock: ClockSample[] = [];
  const respawn = async (slot: WorkerSlot) => {
    const config = {
      seed: (options.seed * 7919 + slot.index * 131 + slot.generation + 1) >>> 0,
      storagePort: storage.port,
      locks,
      ttlMs: options.ttlMs,
      thinkScaleMs: options.thinkScaleMs ?? options.ttlMs,
      longShare: options.longShare ?? 0.1,
      loops: options.loops,
      careless: slot.index < options.careless,
      // Half the workers over the SDK's default Session stream, half over a call (a Hold stream) each.
      transport: (slot.index % 2 === 0 ? 'session' : 'unary') as Transport,
    };
    clock.push(await slot.spawn(config, logDir));
  };
  const env: FaultTargets = { redis: p.redis, sentinels: p.sentinels, nodeArgs: options.nodeArgs, replicas, slots, respawn, ttlMs: options.ttlMs };
  const faults: Fault[] = [];
  try {
    for (let i = 0; i < 3; i++) clock.push(await storage.clock());
    await Promise.all(slots.map(respawn));
    const t0 = monoNow();
    await injectFaults(options, env, random, t0, faults, log);
    const stoppedAt = monoNow();
    // Every wait (up to 3 leases), critical section (up to 1.5 leases) and release call (3 s) ends by itself in this time.
    const graceMs = 4.5 * options.ttlMs + 5_000;
    const stopped = await Promise.all(slots.map((s) => s.finish(graceMs)));
    const stuck = new Set(slots.filter((_, i) => !stopped[i]).map((s) => s.id));
    // Leases run out, then queue entries (3 s) of any waiter a killed process left.
    await sleep(Math.max(options.ttlMs, 3_000) + 1_000);
    const leftovers = await inspectAll(replicas[0].addr, locks);
    const endAt = monoNow();
    const storageDump = await fetchDump(storage.port);
    const ops = readHistory(logDir);
    const killed = new Set(slots.flatMap((s) => s.killed));
    const anomalies = check({ ops, locks, storage: storageDump, faults, killed, stuck, leftovers, endAt });
    log(`${options.label}: ${ops.length} operations, ${faults.length} faults, ${anomalies.length} anomalies`);
    if (options.keepLogs)
      writeFileSync(join(runDir, 'run.json'), JSON.stringify({ options: { ...options, log: undefined }, t0, stoppedAt, endAt, faults, anomalies }, null, 1));
    return {
      options,
      locks,
      ops,
      anomalies,
      faults,
      storage: storageDump,
      t0,
      stoppedAt,
      endAt,
      clock,
      serverErrors: replicas.flatMap((r) => r.errors),
      workerErrors: slots.flatMap((s) => s.stderr),
      crashed: slots.flatMap((s) => s.crashed),
      logDir,
    };
  } finally {
    await stopAll(p);
    if (!options.keepLogs) rmSync(runDir, { recursive: true, force: true });
  }
}

/** The longest a fault of `cls` takes (3 leases, or a restart or failover) and then counts (a lease and 2.5 s more). */
function slotMs(cls: FaultClass, ttlMs: number): number {
  return (/stop|stall/.test(cls) ? 3 * ttlMs : 5_000) + ttlMs + 2_500;
}

/** The fault schedule: after a lease of warm-up, one fault at a time until the duration is up. */
async function injectFaults(options: ChaosOptions, env: FaultTargets, random: Random, t0: number, faults: Fault[], log: (line: string) => void): Promise<void> {
  const endAt = t0 + options.durationS * 1000;
  const order = faultOrder(options.faults, random);
  await sleep(options.ttlMs + 1_000);
  for (;;) {
    const next = order.next();
    const owed = options.everyFaultOnce && faults.length < options.faults.length;
    if (next.done || (!owed && monoNow() + slotMs(next.value, options.ttlMs) > endAt)) break;
    const fault = await strike(next.value, env, random, monoNow);
    faults.push(fault);
    log(`${((fault.start - t0) / 1000).toFixed(1)} s: ${fault.cls} on ${fault.targets.join(', ')} (${(fault.healed - fault.start).toFixed(0)} ms)`);
    await Promise.all(env.slots.filter((s) => !s.alive).map(env.respawn)); // a worker that crashed by itself
    await sleep(fault.until - monoNow() + random.int(300, 1_500));
  }
  await sleep(endAt - monoNow());
  env.slots.forEach((s) => s.signal('SIGCONT'));
}
