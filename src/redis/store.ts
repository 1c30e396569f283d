// Lock state on one Redis (given, embedded or behind Sentinel) or a Redis Cluster: the LockStore
// the engine runs on. It owns what differs between topologies: the function library's loading
// and reloading, pipelines per Cluster node, the replicas' acknowledgement (WAIT, written once
// here for single grants and for the watchdog's batches), slot refreshes after a failover, and
// the quarantine (the write guard).
import calculateSlot from 'cluster-key-slot';
import { Cluster, type Redis } from 'ioredis';
import { fromRedisError, ScriptFlag, type DescribeUnavailable } from '../engine/errors';
import { lockKeys, lockNameOfKey, lockScanPattern, requestIdKey, scriptKeys, waitsKey } from '../engine/keys';
import type { ScriptName } from '../engine/scripts';
import type {
  AcquireAnswer,
  AcquireRequest,
  ClaimAnswer,
  ClaimRequest,
  LockRecord,
  LockRef,
  LockStore,
  ReleaseAnswer,
  ReleaseRequest,
  RenewAnswer,
  RenewRequest,
  RequestIdTie,
  Subscriber,
  WaitEdge,
  WaitGraph,
  WaitRecord,
} from '../engine/store';
import type { FenceCheck } from '../engine/types';
import { isLibraryMissing, lockLibrary } from './functions';
import type { WriteGuard } from './guard';
import {
  acquireAnswer,
  acquireArgs,
  claimAnswer,
  claimArgs,
  fenceCheck,
  lockRecord,
  releaseAnswer,
  releaseArgs,
  renewAnswer,
  renewArgs,
  renewBatchArgs,
  setValueAnswer,
  waitEdge,
  waitRecords,
  type Reply,
} from './operations';
import { scanStep } from './scan';
import { isGranting, scriptKeyCount } from './scripts';

/** One function call: its keys (one hash tag) and arguments. */
interface ScriptCall {
  keys: string[];
  args: (string | number)[];
}

/** The outcome of one call of a pipeline: an error (not yet turned into a LockError) or its reply. */
type BatchResult = [Error | null, unknown];

/** Where a kept lease's lock is, worked out once per lease rather than per renewal. */
interface Located {
  /** renew-3's keys: holders, queue, data. */
  keys: string[];
  /** Which leases one renew-batch-3 call may carry together (batchGroupOf). */
  group: number;
}

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

export class RedisStore implements LockStore, WaitGraph {
  private readonly library = lockLibrary();
  private readonly guard?: WriteGuard;
  private readonly describeUnavailable?: DescribeUnavailable;
  readonly confirmsWrites: boolean;
  readonly queues = true;
  readonly waitGraph: WaitGraph = this;

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

  async acquire(request: AcquireRequest): Promise<AcquireAnswer> {
    const { reply, confirmed } = await this.runConfirmed('acquire', this.callOn(request.lock, 'acquire', acquireArgs(request)));
    return acquireAnswer(reply, confirmed);
  }

  async release(request: ReleaseRequest): Promise<ReleaseAnswer> {
    const call = this.callOn(request.lock, 'release', releaseArgs(request));
    // With replica acknowledgement, a hand-off is a grant: the WAIT goes in the same round trip.
    const { reply, confirmed } =
      request.handOffTo && this.confirmsWrites ? await this.runConfirmed('release', call) : { reply: await this.run('release', call), confirmed: true };
    return releaseAnswer(reply, confirmed);
  }

  async renew(request: RenewRequest): Promise<RenewAnswer> {
    const { reply, confirmed } = await this.runConfirmed('renew', this.callOn(request.lock, 'renew', renewArgs(request)));
    return renewAnswer(Number(reply[0]), Number(reply[1]), confirmed, reply[2]);
  }

  /**
   * renew-batch-3 calls of up to RENEWALS_PER_CALL leases of one batch group each, pipelined in
   * one round trip with one replica acknowledgement for all; without it no renewal counts.
   */
  async renewMany(requests: RenewRequest[]): Promise<(RenewAnswer | Error)[]> {
    const groups = new Map<number, number[]>();
    for (let i = 0; i < requests.length; i++) {
      const { group } = this.locate(requests[i].lock);
      const members = groups.get(group);
      if (members) members.push(i);
      else groups.set(group, [i]);
    }
    const chunks: number[][] = [];
    for (const members of groups.values()) {
      for (let start = 0; start < members.length; start += RENEWALS_PER_CALL) chunks.push(members.slice(start, start + RENEWALS_PER_CALL));
    }
    const calls = chunks.map((chunk): ScriptCall => {
      const keys: string[] = [];
      for (const i of chunk) keys.push(...this.locate(requests[i].lock).keys);
      return { keys, args: renewBatchArgs(chunk.map((i) => requests[i])) };
    });
    const results = await this.runBatch('renewBatch', calls);
    const answers: (RenewAnswer | Error)[] = new Array(requests.length);
    chunks.forEach((chunk, c) => {
      const [err, reply] = results[c] ?? [new Error('no reply'), null];
      // Two entries per lease, in order.
      const replies = reply as number[] | null;
      const answered = !err && Array.isArray(replies) && replies.length === 2 * chunk.length;
      const failure = answered ? null : (fromRedisError(err ?? new Error('no reply'), this.describeUnavailable) as Error);
      chunk.forEach((i, at) => {
        answers[i] = failure ?? renewAnswer(Number(replies![2 * at]), Number(replies![2 * at + 1]), true);
      });
    });
    return answers;
  }

  async claim(request: ClaimRequest): Promise<ClaimAnswer> {
    const { reply, confirmed } = await this.runConfirmed('claim', this.callOn(request.lock, 'claim', claimArgs(request)));
    return claimAnswer(reply, confirmed);
  }

  async dequeue(request: { lock: LockRef; waiterId: string }): Promise<void> {
    await this.run('dequeue', this.callOn(request.lock, 'dequeue', [request.waiterId]));
  }

  async inspect(lock: LockRef): Promise<LockRecord> {
    return lockRecord(await this.run('inspect', this.callOn(lock, 'inspect', [])));
  }

  async checkFencingToken(request: { lock: LockRef; fencingToken: string }): Promise<FenceCheck> {
    return fenceCheck(await this.run('checkFencingToken', this.callOn(request.lock, 'checkFencingToken', [request.fencingToken])));
  }

  async tieRequestId(request: RequestIdTie): Promise<boolean> {
    const keys = [requestIdKey(request.prefix, request.requestId)];
    const tied: unknown = await this.run('requestId', { keys, args: [request.asked, request.rememberMs] });
    return tied === ScriptFlag.YES;
  }

  async setValue(request: { lock: LockRef; token: string; value: string }): Promise<{ fencingToken: string } | null> {
    return setValueAnswer(await this.run('setValue', this.callOn(request.lock, 'setValue', [request.token, request.value])));
  }

  async noteWait(request: { prefix: string; owner: string; waiterId: string; name: string; waitedMs: number; keepMs: number }): Promise<number> {
    const { prefix, owner, waiterId, name, waitedMs, keepMs } = request;
    const since: unknown = await this.run('noteWait', { keys: [waitsKey(prefix, owner)], args: [waiterId, name, Math.round(waitedMs), Math.ceil(keepMs)] });
    return Number(since);
  }

  async forgetWait(request: { prefix: string; owner: string; waiterId: string }): Promise<void> {
    await this.run('forgetWait', { keys: [waitsKey(request.prefix, request.owner)], args: [request.waiterId] });
  }

  async waitsOf(request: { prefix: string; owner: string }): Promise<WaitRecord[]> {
    return waitRecords(await this.run('waitsOf', { keys: [waitsKey(request.prefix, request.owner)], args: [] }));
  }

  async waitEdge(request: { lock: LockRef; waiterId: string; owner: string }): Promise<WaitEdge> {
    return waitEdge(await this.run('waitEdge', this.callOn(request.lock, 'waitEdge', [request.waiterId, request.owner])));
  }

  async abortWait(request: { lock: LockRef; waiterId: string; message: string }): Promise<boolean> {
    const ended: unknown = await this.run('abortWait', this.callOn(request.lock, 'abortWait', [request.waiterId, request.message]));
    return ended === ScriptFlag.YES;
  }

  /** SCAN (never KEYS) for the holder and queue keys of the prefix's locks. */
  async scanLocks(prefix: string, cursor: string, count: number, namePrefix: string): Promise<{ names: string[]; cursor: string }> {
    let step: { keys: string[]; cursor: string };
    try {
      step = await scanStep(this.redis, cursor, lockScanPattern(prefix, namePrefix), count);
    } catch (err) {
      this.refreshIfStale(this.redis, err);
      throw fromRedisError(err, this.describeUnavailable);
    }
    const names = new Set<string>();
    for (const key of step.keys) {
      const name = lockNameOfKey(prefix, key);
      if (name !== null) names.add(name);
    }
    return { names: [...names], cursor: step.cursor };
  }

  /** A script's call on one lock: the lock's keys it takes, in its header's order. */
  private callOn(lock: LockRef, script: ScriptName, args: (string | number)[]): ScriptCall {
    return { keys: scriptKeys(lockKeys(lock.prefix, lock.name), scriptKeyCount(script)), args };
  }

  /**
   * A lock's renew keys and batch group. A kept lease asks again every tick, so it keeps them in
   * its storeNote (a field on the lease, not a WeakMap: a lookup per renewal and an entry per
   * lease less).
   */
  private locate(lock: LockRef): Located {
    const noted = lock.storeNote as Located | undefined;
    if (noted) return noted;
    const { holders, queue, data } = lockKeys(lock.prefix, lock.name);
    const located: Located = { keys: [holders, queue, data], group: this.batchGroupOf(holders) };
    if ('storeNote' in lock) lock.storeNote = located;
    return located;
  }

  private holdersOf(lock: LockRef): string {
    return lockKeys(lock.prefix, lock.name).holders;
  }

  /** Runs one script; Redis trouble becomes LockError('unavailable'). */
  private async run(script: ScriptName, call: ScriptCall): Promise<Reply> {
    const [onMaster, args] = this.argsFor(script, call);
    try {
      return (await this.library.call(this.redis, script, call.keys, args, onMaster)) as Reply;
    } catch (err) {
      this.refreshIfStale(this.redis, err);
      throw fromRedisError(err, this.describeUnavailable);
    }
  }

  /**
   * Runs a script that grants or extends a lease, followed, when the topology asks for replica
   * acknowledgement, by its check in the same round trip; `confirmed` says whether it passed.
   */
  private async runConfirmed(script: ScriptName, call: ScriptCall, reloaded = false): Promise<{ reply: Reply; confirmed: boolean }> {
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

  /** Calls that all go to one node in one pipelined round trip, confirmed together; a call the replicas did not confirm fails. */
  private async runBatch(script: ScriptName, calls: ScriptCall[]): Promise<BatchResult[]> {
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

  channelOf(lock: LockRef): string {
    return lockKeys(lock.prefix, lock.name).channel;
  }

  nodeOf(lock: LockRef): string {
    const connection = this.writes;
    return connection instanceof Cluster ? (connection.slots[calculateSlot(this.locate(lock).keys[0])]?.[0] ?? '') : '';
  }

  /** A Cluster's script touches one slot: batch per slot there. One Redis (or Sentinel's master) takes any keys in one call. */
  private batchGroupOf(key: string): number {
    return this.writes instanceof Cluster ? calculateSlot(key) : 0;
  }

  grantsBlocked(lock: LockRef): string | null {
    return this.guard?.grantsBlocked(this.holdersOf(lock)) ?? null;
  }

  grantsResumeInMs(lock: LockRef): number {
    const key = this.holdersOf(lock);
    if (!this.guard?.grantsBlocked(key)) return 0;
    return this.guard.grantsResumeInMs(key);
  }

  lastFailoverAt(lock: LockRef): number {
    return this.guard?.lastFailoverAt(this.holdersOf(lock)) ?? -Infinity;
  }

  verifying(lock: LockRef): boolean {
    return this.guard?.verifying(this.holdersOf(lock)) ?? false;
  }

  checksMaster(lock: LockRef): boolean {
    return !!this.guard?.expectedMaster(this.holdersOf(lock));
  }
}
