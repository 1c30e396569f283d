// Lock state on one Redis (given, embedded or behind Sentinel) or a Redis Cluster: the LockStore
// the engine runs on. It owns what differs between topologies: the function library's loading
// and reloading, pipelines per Cluster node, the replicas' acknowledgement (WAIT, written once
// here for single grants and for the watchdog's batches), slot refreshes after a failover, and
// the quarantine (the write guard).
import calculateSlot from 'cluster-key-slot';
import { Cluster, type Redis } from 'ioredis';
import { fromRedisError, type DescribeUnavailable } from '../engine/errors';
import { isGranting, type ScriptName } from '../engine/scripts';
import type { BatchResult, LockStore, Reply, ScriptCall, Subscriber } from '../engine/store';
import { isLibraryMissing, lockLibrary } from './functions';
import type { WriteGuard } from './guard';
import { scanStep } from './scan';

export interface RedisStoreOptions {
  /** Replica acknowledgement and failover quarantine, from the topology; none by default. */
  guard?: WriteGuard;
  /** Words for a client's UNAVAILABLE: where Redis is and what is wrong (default: the error's own message). */
  describeUnavailable?: DescribeUnavailable;
}

/**
 * Leases per 'renewBatch' call (lua/renew-batch-3.lua). Redis runs nothing else while a function
 * runs, and a call's time grows with its leases (15 µs each on a busy 2-core machine: 1.5 ms
 * for 100, 8 ms for 500); the saving per lease was all had by 100 (npm run bench:renew-steps;
 * docs/sessions.md, "Caps and back-pressure").
 */
export const RENEWALS_PER_CALL = 100;

/** Replies that say a Cluster's slot map is stale (MASTERCHANGED: lua/includes/expect-master.lua). */
const STALE_SLOTS = /^(MOVED|ASK|MASTERCHANGED) /;

export class RedisStore implements LockStore {
  private readonly library = lockLibrary();
  private readonly guard?: WriteGuard;
  private readonly describeUnavailable?: DescribeUnavailable;
  readonly confirmsWrites: boolean;
  readonly queues = true;
  readonly renewalsPerCall = RENEWALS_PER_CALL;

  constructor(
    private readonly redis: Redis | Cluster,
    readonly subscriber: Subscriber & (Redis | Cluster),
    options: RedisStoreOptions = {},
  ) {
    this.guard = options.guard;
    this.describeUnavailable = options.describeUnavailable;
    this.confirmsWrites = !!this.guard?.confirmAfter;
  }

  /** Loads the lock functions onto every master (as soon as Redis answers, not with the first grant). */
  loadFunctions(): Promise<void> {
    return this.library.load(this.redis);
  }

  async run(script: ScriptName, call: ScriptCall): Promise<Reply> {
    const [onMaster, args] = this.argsFor(script, call);
    try {
      return (await this.library.call(this.redis, script, call.keys, args, onMaster)) as Reply;
    } catch (err) {
      this.refreshIfStale(this.redis, err);
      throw fromRedisError(err, this.describeUnavailable);
    }
  }

  async runConfirmed(script: ScriptName, call: ScriptCall, reloaded = false): Promise<{ reply: Reply; confirmed: boolean }> {
    if (!this.confirmsWrites) return { reply: await this.run(script, call), confirmed: true };
    const { results, confirmed } = await this.pipelined(script, [call]);
    const [err, reply] = results[0];
    if (err) {
      if (isLibraryMissing(err) && !reloaded) {
        await this.library.load(this.writes).catch(() => {});
        return this.runConfirmed(script, call, true);
      }
      throw fromRedisError(err, this.describeUnavailable);
    }
    return { reply: reply as Reply, confirmed };
  }

  async runBatch(script: ScriptName, calls: ScriptCall[]): Promise<BatchResult[]> {
    const { results, confirmed } = await this.pipelined(script, calls);
    // Redis lost the library (a restart without persistence): load it for the next try.
    if (results.some(([err]) => isLibraryMissing(err))) await this.library.load(this.writes).catch(() => {});
    if (confirmed) return results;
    const unconfirmed = new Error('NOREPLICAS the renewals were not confirmed by enough replicas in time');
    return results.map(([err]) => [err ?? unconfirmed, null]);
  }

  /**
   * One round trip on the connection confirmed writes go on: the calls, then (when asked) the
   * replicas' check. A cluster pipeline must stay on one node: callers group by nodeOf().
   */
  private async pipelined(script: ScriptName, calls: ScriptCall[]): Promise<{ results: BatchResult[]; confirmed: boolean }> {
    const connection = this.writes;
    const pipeline = connection.pipeline();
    for (const call of calls) {
      const [onMaster, args] = this.argsFor(script, call);
      this.library.queue(pipeline, script, call.keys, args, onMaster);
    }
    const check = this.guard?.confirmAfter?.(pipeline);
    let results: BatchResult[];
    try {
      results = ((await pipeline.exec()) ?? []) as BatchResult[];
    } catch (err) {
      results = calls.map(() => [err as Error, null]);
    }
    const replies = calls.map((_, i): BatchResult => results[i] ?? [new Error('no reply'), null]);
    const failure = replies.find(([err]) => err)?.[0];
    if (failure) this.refreshIfStale(connection, failure);
    if (!check) return { results: replies, confirmed: true };
    const [waitErr, acks] = results[calls.length] ?? [new Error('no reply'), null];
    return { results: replies, confirmed: !waitErr && check(acks) };
  }

  /** Confirmed writes go where the guard says: WAIT waits for that connection's writes. */
  private get writes(): Redis | Cluster {
    return this.guard?.confirmAfter ? (this.guard.connection ?? this.redis) : this.redis;
  }

  /**
   * Whether a script runs as its on-master variant, and its arguments: a grant on a Cluster with
   * the quarantine names the master it must be made on (lua/includes/expect-master.lua).
   */
  private argsFor(script: ScriptName, call: ScriptCall): [boolean, (string | number)[]] {
    const master = isGranting(script) ? (this.guard?.expectedMaster(call.keys[0]) ?? '') : '';
    return master ? [true, [...call.args, master]] : [false, call.args];
  }

  /** A stale slot map after a Cluster failover: learn the new one before the next call. */
  private refreshIfStale(connection: Redis | Cluster, err: unknown): void {
    if (connection instanceof Cluster && STALE_SLOTS.test((err as Error)?.message ?? '')) connection.refreshSlotsCache();
  }

  nodeOf(key: string): string {
    const connection = this.writes;
    return connection instanceof Cluster ? (connection.slots[calculateSlot(key)]?.[0] ?? '') : '';
  }

  /** A Cluster's script touches one slot: batch per slot there. One Redis (or Sentinel's master) takes any keys in one call. */
  batchGroupOf(key: string): number {
    return this.writes instanceof Cluster ? calculateSlot(key) : 0;
  }

  async scan(cursor: string, pattern: string, count: number): Promise<{ keys: string[]; cursor: string }> {
    try {
      return await scanStep(this.redis, cursor, pattern, count);
    } catch (err) {
      this.refreshIfStale(this.redis, err);
      throw fromRedisError(err, this.describeUnavailable);
    }
  }

  grantsBlocked(key: string): string | null {
    return this.guard?.grantsBlocked(key) ?? null;
  }

  grantsResumeInMs(key: string): number {
    if (!this.guard?.grantsBlocked(key)) return 0;
    return this.guard.grantsResumeInMs(key);
  }

  lastFailoverAt(key: string): number {
    return this.guard?.lastFailoverAt(key) ?? -Infinity;
  }

  verifying(key: string): boolean {
    return this.guard?.verifying(key) ?? false;
  }

  checksMaster(key: string): boolean {
    return !!this.guard?.expectedMaster(key);
  }
}
