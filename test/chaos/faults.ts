// The faults a chaos run injects, one class at a time, so that the checker can put every anomaly
// down to the fault that was active when it happened. A fault's effect lasts past its healing by
// one lease and some slack (`until`): a lock a killed holder kept is free only after its lease.
import { startEmbeddedRedis } from '../../src/redis/embedded';
import type { TestSentinels } from '../support/sentinel';
import type { RedisNode, Replica, WorkerSlot } from './cluster';
import type { Random } from './random';

export type FaultClass =
  | 'client-kill'
  | 'client-stop'
  | 'client-stall'
  | 'client-cut'
  | 'client-stop-cut'
  | 'server-kill'
  | 'server-stop'
  | 'server-term'
  | 'server-redis-stall'
  | 'server-redis-cut'
  | 'redis-stop'
  | 'redis-restart-aof'
  | 'redis-restart-empty'
  | 'redis-failover';

export interface FaultInfo {
  /** True where holdfast claims safety (README "Guarantees"): zero unfenced overlaps expected. */
  claimedSafe: boolean;
  what: string;
  /** Why the class cannot be run yet; unset when it can. */
  notRun?: string;
  /** Runs only on the Sentinel deployment (master, two replicas, three Sentinels). */
  sentinel?: boolean;
}

export const FAULT_CLASSES: Record<FaultClass, FaultInfo> = {
  'client-kill': { claimedSafe: true, what: 'a holding and a waiting client SIGKILLed (a new process takes their place)' },
  'client-stop': { claimedSafe: true, what: 'a holding and a waiting client SIGSTOPped for 2-3 leases, then SIGCONT' },
  'client-stall': { claimedSafe: true, what: "a holding and a waiting client's connections to every replica frozen for 2-3 leases" },
  'client-cut': { claimedSafe: true, what: "two holding clients' connections to every replica cut" },
  'client-stop-cut': {
    claimedSafe: true,
    what: 'two Hold holders SIGSTOPped and their connections cut (a paused, partitioned holder), SIGCONT after 2-3 leases',
  },
  'server-kill': { claimedSafe: true, what: 'a replica SIGKILLed, restarted on its port 0.3-1 s later' },
  'server-stop': { claimedSafe: true, what: 'a replica SIGSTOPped for 2-3 leases, then SIGCONT' },
  'server-term': { claimedSafe: true, what: 'a replica shut down with SIGTERM and restarted' },
  'server-redis-stall': { claimedSafe: true, what: "a replica's connection to Redis frozen for 2-3 leases" },
  'server-redis-cut': { claimedSafe: true, what: "a replica's connections to Redis cut, twice one lease apart" },
  'redis-stop': { claimedSafe: true, what: 'redis-server SIGSTOPped for 2-3 leases, then SIGCONT' },
  'redis-restart-aof': { claimedSafe: true, what: 'redis-server SIGKILLed and restarted from its appendonly file (appendfsync always)' },
  'redis-restart-empty': {
    claimedSafe: true,
    what: 'redis-server SIGKILLed and restarted empty, as one without persistence would (safe by default: the quarantine)',
  },
  'redis-failover': {
    claimedSafe: true,
    what: "the master's replicas paused and cut off, 0.3-0.8 s of writes on the master alone, the master SIGKILLed: Sentinel promotes a replica without them (issue 9); the old master comes back as a replica",
    sentinel: true,
  },
};

/**
 * Whether holdfast claims safety under `cls` ('none': no fault) in a configuration that names the
 * classes it claims (`safe`), or by default in FAULT_CLASSES.
 */
export function claimedSafeUnder(cls: string, safe?: FaultClass[]): boolean {
  if (cls === 'none') return true;
  const info = FAULT_CLASSES[cls as FaultClass];
  if (!info) return false;
  return safe ? safe.includes(cls as FaultClass) : info.claimedSafe;
}

export interface Fault {
  cls: FaultClass;
  /** Which processes or links it hit: worker ids, replica-N, redis. */
  targets: string[];
  start: number;
  healed: number;
  /** Anomalies up to here are put down to this fault. */
  until: number;
}

export interface FaultTargets {
  /** The one redis-server, or the Sentinel deployment and its data nodes' arguments. */
  redis?: RedisNode;
  sentinels?: TestSentinels;
  nodeArgs?: string[];
  replicas: Replica[];
  slots: WorkerSlot[];
  /** Starts a new worker process in a slot whose process was killed. */
  respawn(slot: WorkerSlot): Promise<void>;
  ttlMs: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Up to `count` live, running workers, those doing what `prefer` names first (in that order of
 * preference): a client fault should strike while a lock is held or awaited.
 */
function pickSlots(env: FaultTargets, random: Random, prefer: ((s: WorkerSlot) => boolean)[]): WorkerSlot[] {
  const chosen: WorkerSlot[] = [];
  for (const wanted of prefer) {
    const free = env.slots.filter((s) => s.alive && !s.frozen && !chosen.includes(s));
    const fitting = free.filter(wanted);
    if (free.length > 0) chosen.push(random.pick(fitting.length > 0 ? fitting : free));
  }
  return chosen;
}

const holding = (s: WorkerSlot) => s.has('holding');
const waiting = (s: WorkerSlot) => s.has('waiting');
const holdingThroughHold = (s: WorkerSlot) => s.has('holding', 'hold');
/** Where a paused holder's successor is most likely waiting: a lock only one may hold. */
const holdingExclusively = (s: WorkerSlot) => s.has('holding', 'hold', ['exclusive', 'writer']);

/** Applies the fault and heals it; resolves when it is healed. Returns its targets. */
async function apply(cls: FaultClass, env: FaultTargets, random: Random, pastLease: number): Promise<string[]> {
  const replica = random.pick(env.replicas);
  const ids = (slots: WorkerSlot[]) => slots.map((s) => s.id);
  switch (cls) {
    case 'client-kill': {
      const slots = pickSlots(env, random, [holding, waiting]);
      const targets = ids(slots);
      await Promise.all(slots.map((s) => s.kill()));
      await sleep(300);
      await Promise.all(slots.map((s) => env.respawn(s)));
      return targets;
    }
    case 'client-stop':
    case 'client-stop-cut': {
      const cut = cls === 'client-stop-cut';
      const slots = pickSlots(env, random, cut ? [holdingExclusively, holdingThroughHold] : [holding, waiting]);
      slots.forEach((s) => s.signal('SIGSTOP'));
      if (cut) slots.forEach((s) => s.proxies.forEach((p) => p.cut()));
      await sleep(pastLease);
      slots.forEach((s) => s.signal('SIGCONT'));
      return ids(slots);
    }
    case 'client-stall': {
      const slots = pickSlots(env, random, [holding, waiting]);
      slots.forEach((s) => s.proxies.forEach((p) => p.stall()));
      await sleep(pastLease);
      slots.forEach((s) => s.proxies.forEach((p) => p.resume()));
      return ids(slots);
    }
    case 'client-cut': {
      const slots = pickSlots(env, random, [holding, holding]);
      slots.forEach((s) => s.proxies.forEach((p) => p.cut()));
      return ids(slots);
    }
    case 'server-kill':
    case 'server-term':
      await replica.end(cls === 'server-kill' ? 'SIGKILL' : 'SIGTERM');
      await sleep(random.int(300, 1000));
      await replica.start();
      return [`replica-${replica.index}`];
    case 'server-stop':
      replica.signal('SIGSTOP');
      await sleep(pastLease);
      replica.signal('SIGCONT');
      return [`replica-${replica.index}`];
    case 'server-redis-stall':
      need(replica.redisLink, cls).stall();
      await sleep(pastLease);
      need(replica.redisLink, cls).resume();
      return [`replica-${replica.index}`];
    case 'server-redis-cut':
      need(replica.redisLink, cls).cut();
      await sleep(env.ttlMs);
      need(replica.redisLink, cls).cut();
      return [`replica-${replica.index}`];
    case 'redis-stop':
      need(env.redis, cls).signal('SIGSTOP');
      await sleep(pastLease);
      need(env.redis, cls).signal('SIGCONT');
      return ['redis'];
    case 'redis-restart-aof':
    case 'redis-restart-empty':
      await need(env.redis, cls).crashAndRestart(cls === 'redis-restart-empty', 300);
      return ['redis'];
    case 'redis-failover':
      return strikeFailover(need(env.sentinels, cls), env.nodeArgs ?? [], random);
  }
}

/** What a fault class acts on, or an error naming the topology it needs. */
function need<T>(target: T | undefined, cls: FaultClass): T {
  if (target === undefined)
    throw new Error(`${cls} cannot run on this topology (${FAULT_CLASSES[cls].sentinel ? 'it needs Sentinel' : 'it needs the one redis-server'})`);
  return target;
}

/**
 * Issue 9's lost write: the master's replicas are paused and their links cut, the master takes
 * grants and renewals alone for a moment, then dies; Sentinel promotes a replica that never saw
 * them. The old master comes back on its port as a replica of the new one, for the next round.
 */
async function strikeFailover(group: TestSentinels, nodeArgs: string[], random: Random): Promise<string[]> {
  const old = await group.master();
  const replicas = await group.cutReplicas(old);
  await sleep(random.int(300, 800)); // under Sentinel's down-after (1000 ms): the replicas stay candidates
  process.kill(old.pid, 'SIGKILL');
  await new Promise<void>((resolve) =>
    old.process.exitCode !== null || old.process.signalCode !== null ? resolve() : old.process.once('exit', () => resolve()),
  );
  replicas.forEach((r) => process.kill(r.pid, 'SIGCONT'));
  const promoted = await group.failedOverFrom(old);
  const args = [...SENTINEL_NODE_ARGS, ...nodeArgs, '--replicaof', '127.0.0.1', String(promoted.port)];
  group.nodes[group.nodes.indexOf(old)] = await startEmbeddedRedis({ dataDir: old.dataDir, port: old.port, args });
  return [`master ${old.port} to ${promoted.port}`];
}

/** test/support/sentinel.ts's data node arguments, for a node brought back by hand. */
export const SENTINEL_NODE_ARGS = ['--save', '', '--repl-diskless-sync-delay', '0', '--repl-timeout', '5', '--min-replicas-to-write', '1'];

/** Injects one fault of `cls` and heals it; resolves with what it did and how long it counts. */
export async function strike(cls: FaultClass, env: FaultTargets, random: Random, monoNow: () => number): Promise<Fault> {
  const start = monoNow();
  const targets = await apply(cls, env, random, Math.round(env.ttlMs * random.between(2, 3)));
  const healed = monoNow();
  // Restarts make every client reconnect: give their effects a second more to show.
  const slack = /kill|term|restart|failover/.test(cls) ? 2_500 : 1_500;
  return { cls, targets, start, healed, until: healed + env.ttlMs + slack };
}

/** The classes that can run, in a seeded order that repeats every class before any comes again. */
export function* faultOrder(classes: FaultClass[], random: Random): Generator<FaultClass> {
  const runnable = classes.filter((c) => !FAULT_CLASSES[c].notRun);
  if (runnable.length === 0) return;
  for (;;) yield* random.shuffle(runnable);
}
