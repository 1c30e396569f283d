// The lock engine: plain requests in, plain results out. Every change to lock state is one
// named request to the store (src/engine/store.ts: whichever topology it is, one slot per call);
// waiting lives in WaitRoom (a queue in storage) or RetryWait (a store without one), lease
// keeping in Watchdog. Knows nothing about gRPC or topologies; what a store cannot do, it asks.
import { ttlCapProblem } from '../config/bounds';
import { LockError } from './errors';
import { NO_OBSERVER, type EngineObserver } from './observer';
import { conflictError, grantOf, notHeld, requestIdReused } from './replies';
import type { ScriptName } from './scripts';
import type { ClaimAnswer, LockRef, LockStore, ReleaseAnswer, ReleaseRequest } from './store';
import type {
  AcquireParams,
  FenceCheck,
  Grant,
  KeepRequest,
  KeptLease,
  LeaseEvents,
  LockInfo,
  LostReason,
  LockScan,
  ReleaseOptions,
  ReleaseResult,
} from './types';
import { LeaseGroup, type GroupEvents, type GroupOptions } from './lease-group';
import { DeadlockDetector, type DeadlockOptions } from './deadlocks';
import { LockChannels } from './lock-channels';
import { randomId } from './random-ids';
import { RetryWait } from './retry-wait';
import { WaitRoom, type WaitRoomStats } from './wait-room';
import { WatchRoom, type WatchListener } from './watch-room';
import { Watchdog, type WatchdogStats } from './watchdog';

export interface EngineOptions {
  /** First part of every key. */
  keyPrefix?: string;
  /** How long a queue entry lives unless its server refreshes it (a dead server's waiters drop out). */
  entryLeaseMs?: number;
  /** How often a server refreshes its queue entries and looks for expired holders. */
  entryRefreshMs?: number;
  /** Called with failures nobody is waiting for (background refreshes), to be logged. */
  onBackgroundError?: (err: unknown) => void;
  /** The longest lease granted or renewed (a failover quarantine waits this long); default: no cap here. */
  maxTtlMs?: number;
  /** Queued waiters per lock, across all servers on this Redis; 0 or absent: no cap. */
  maxWaitersPerLock?: number;
  /** Told of lock events and timings (metrics, traces); none by default. */
  observer?: EngineObserver;
  /** Deadlock detection (deadlocks.ts) on a store with a wait graph; absent or timeoutMs 0: off. */
  deadlocks?: DeadlockOptions;
}

/** What this engine keeps in memory right now: all zero (and no timer) when it serves nobody. */
export type EngineStats = WaitRoomStats & WatchdogStats;

/** 128 random bits: the secret that releases and renews a grant. */
export function newToken(): string {
  return randomId(16);
}

/** A request id is remembered across locks this long beyond the wait and the lease it asked for. */
const REQUEST_ID_RETAIN_MS = 60_000;

export class LockEngine {
  readonly prefix: string;
  readonly entryLeaseMs: number;
  /** Prefixes this server's waiter ids ('<server id>.<random>'): release-4 hands the lock to them directly. */
  readonly serverId = randomId(6);
  private readonly room: WaitRoom;
  private readonly retries: RetryWait;
  private readonly watchers: WatchRoom;
  private readonly watchdog: Watchdog;
  private readonly maxTtlMs: number;
  private readonly maxWaitersPerLock: number;
  readonly observer: EngineObserver;

  constructor(
    private readonly store: LockStore,
    options: EngineOptions = {},
  ) {
    this.prefix = options.keyPrefix ?? 'hf';
    this.entryLeaseMs = options.entryLeaseMs ?? 3000;
    this.maxTtlMs = options.maxTtlMs ?? Infinity;
    this.maxWaitersPerLock = options.maxWaitersPerLock ?? 0;
    this.observer = options.observer ?? NO_OBSERVER;
    const onBackgroundError = options.onBackgroundError ?? (() => {});
    const channels = new LockChannels(store.subscriber);
    const graph = store.waitGraph;
    const deadlocks =
      graph && options.deadlocks?.timeoutMs
        ? new DeadlockDetector(graph, this.prefix, this.entryLeaseMs, { onBackgroundError, ...options.deadlocks })
        : undefined;
    this.room = new WaitRoom(this, channels, { refreshMs: options.entryRefreshMs ?? 1000, onBackgroundError, deadlocks });
    this.retries = new RetryWait(this, channels);
    if (store.scanLocks) this.scanLocks = (cursor, count, namePrefix = '') => store.scanLocks!(this.prefix, cursor, count, namePrefix);
    this.watchers = new WatchRoom(this, channels, onBackgroundError);
    // The watchdog's give-back of a hold it kept: finding it gone already (its set was released
    // with ReleaseSet, its loss was counted by the renewal) is no lease expiry seen by a Release.
    this.watchdog = new Watchdog(store, this.prefix, (name, token, how) => this.release(name, token, how, false), onBackgroundError, this.observer);
  }

  /** The lock `name` of this engine's namespace, as the store finds it. */
  private lockOf(name: string): LockRef {
    return { prefix: this.prefix, name };
  }

  /** Serves this server's queued waiters on `name` (the wait room's claim). */
  claim(name: string, waiterIds: string[]): Promise<ClaimAnswer> {
    return this.observed('claim', () => this.store.claim({ lock: this.lockOf(name), entryLeaseMs: this.entryLeaseMs, waiterIds }));
  }

  /** Takes a waiter whose call ended out of the queue of `name`. */
  dequeue(name: string, waiterId: string): Promise<void> {
    return this.observed('dequeue', () => this.store.dequeue({ lock: this.lockOf(name), waiterId }));
  }

  private async observed<T>(script: ScriptName, call: () => Promise<T>): Promise<T> {
    const probe = this.observer.scriptStart(script);
    let failed = true;
    try {
      const result = await call();
      failed = false;
      return result;
    } finally {
      this.observer.scriptEnd(probe, script, failed);
    }
  }

  /** Why grants of `name` cannot be made now (a quarantine after a failover), or null. */
  grantsBlocked(name: string): string | null {
    return this.store.grantsBlocked(this.lockOf(name));
  }

  /** How long until grants of `name` resume (0: they may be made now). */
  grantsResumeInMs(name: string): number {
    return this.store.grantsResumeInMs(this.lockOf(name));
  }

  /** A grant the replicas did not confirm: give it back (if it is still ours) and say so. */
  async undoUnconfirmed(name: string, token: string, holdId: string): Promise<LockError> {
    await this.release(name, token, { holdId }).catch(() => {});
    return new LockError('unavailable', `lock "${name}": the grant was not confirmed by enough Redis replicas in time, so it was given back`);
  }

  channelOf(name: string): string {
    return this.store.channelOf(this.lockOf(name));
  }

  /**
   * Acquires a lock, queueing up to params.waitMs. Resolves null when it was not granted in
   * time, or when `signal` aborted (a grant that raced the abort is released first).
   */
  async acquire(params: AcquireParams, signal?: AbortSignal): Promise<Grant | null> {
    const probe = this.observer.acquireStart();
    try {
      const grant = await this.grantOrWait(params, signal);
      this.observer.acquireEnd(probe, grant ? 'granted' : 'not_granted');
      return grant;
    } catch (err) {
      this.observer.acquireEnd(probe, 'error');
      throw err;
    }
  }

  private async grantOrWait(params: AcquireParams, signal?: AbortSignal): Promise<Grant | null> {
    this.refuseIf(this.store.refusal?.('acquire', params));
    this.checkTtl(params.ttlMs);
    if (params.requestId) await this.tieRequestId(params);
    const deadline = performance.now() + params.waitMs;
    // Waiters wait out a quarantine here; a try-once caller is told UNAVAILABLE by attempt().
    if (params.waitMs > 0 && !(await this.untilGrantsResume(params.name, deadline, signal))) return null;
    if (!this.store.queues) return this.grantOrRetry(params, deadline, signal);
    const waiterId = params.waitMs > 0 ? this.room.expect(`${this.serverId}.${randomId(9)}`) : '';
    const token = newToken();
    let queued = false;
    let reply: Awaited<ReturnType<LockEngine['attempt']>>;
    try {
      reply = await this.attempt(params, token, waiterId);
      queued = reply.queued === true;
    } finally {
      // Not known to be queued: a release may have handed it the lock all the same (give that back).
      if (waiterId && !queued) this.room.unexpect(params, waiterId);
    }
    if (reply.grant) {
      if (!signal?.aborted) return reply.grant;
      await this.release(params.name, reply.grant.token, { holdId: params.holdId }).catch(() => {});
      return null;
    }
    if (!reply.queued) return null;
    const probe = this.observer.waitStart();
    try {
      const grant = await this.room.wait({ params, token, waiterId, deadline, nextExpiryMs: reply.nextExpiryMs }, signal);
      this.observer.waitEnd(probe, grant ? 'granted' : 'not_granted');
      return grant;
    } catch (err) {
      this.observer.waitEnd(probe, 'error');
      throw err;
    }
  }

  /** Storage without a queue: try, then retry until the deadline (retry-wait.ts). */
  private async grantOrRetry(params: AcquireParams, deadline: number, signal?: AbortSignal): Promise<Grant | null> {
    const grant = await this.retries.acquire(params, deadline, signal);
    if (!grant || !signal?.aborted) return grant;
    await this.release(params.name, grant.token, { holdId: params.holdId }).catch(() => {});
    return null;
  }

  /** One try that never queues, with a fresh token. */
  tryOnce(params: AcquireParams): Promise<{ grant?: Grant; nextExpiryMs: number }> {
    return this.attempt(params, newToken(), '');
  }

  /** A store's refusal, thrown. */
  private refuseIf(refused: LockError | null | undefined): void {
    if (refused) throw refused;
  }

  /** One acquire request: granted, refused, or queued under waiterId (when not ''). */
  async attempt(params: AcquireParams, token: string, waiterId: string): Promise<{ grant?: Grant; queued?: boolean; nextExpiryMs: number }> {
    const { name, owner, ttlMs, mode, limit, requestId, holdId, value, waitAs } = params;
    const blocked = this.grantsBlocked(name);
    if (blocked) throw new LockError('unavailable', `lock "${name}": ${blocked}`);
    const sentAt = performance.now();
    const entryLeaseMs = this.entryLeaseMs;
    const request = {
      lock: this.lockOf(name),
      token,
      owner,
      ttlMs,
      mode,
      limit,
      requestId,
      waiterId,
      entryLeaseMs,
      holdId,
      maxWaiters: this.maxWaitersPerLock,
      value,
      waitAs,
    };
    const answer = await this.observed('acquire', () => this.store.acquire(request));
    switch (answer.outcome) {
      case 'granted': {
        const grant = grantOf(answer.grant, sentAt);
        if (!answer.confirmed) throw await this.undoUnconfirmed(name, grant.token, holdId);
        return { grant, nextExpiryMs: -1 };
      }
      case 'not_granted':
        return { nextExpiryMs: answer.nextExpiryMs };
      case 'queued':
        return { queued: true, nextExpiryMs: answer.nextExpiryMs };
      case 'refused':
        throw conflictError(name, answer.refusal, limit);
    }
  }

  /**
   * A request id unlocks its grant's token, so it is tied to the one request it was first used
   * for, on any lock; the lock's own record (acquire-4) checks the same within its slot.
   */
  private async tieRequestId(params: AcquireParams): Promise<void> {
    const { name, owner, mode, limit, ttlMs, waitMs, requestId } = params;
    const asked = JSON.stringify([name, owner, mode, limit, ttlMs]);
    const rememberMs = waitMs + ttlMs + REQUEST_ID_RETAIN_MS;
    const tie = { prefix: this.prefix, requestId, asked, rememberMs };
    if (!(await this.observed('requestId', () => this.store.tieRequestId(tie)))) throw requestIdReused();
  }

  /**
   * Gives back one hold: the Hold stream's named hold, or one of the grant's. A Hold stream
   * served by this server whose hold it was ends as 'released'. `countGone`: a token that holds
   * nothing is counted as a lease expiry (a caller's Release).
   */
  async release(name: string, token: string, options: ReleaseOptions = {}, countGone = true): Promise<ReleaseResult> {
    const { holdId = '', vanished = false, lockDelayMs = 0, vanishedLeaseMs, why } = options;
    const request: ReleaseRequest = {
      lock: this.lockOf(name),
      token,
      holdId,
      vanished,
      lockDelayMs,
      vanishedLeaseMs,
      handOffTo: this.handOffTarget(name),
      why: why ?? '',
    };
    const leaseStart = performance.now();
    if (holdId) this.watchdog.releasing(holdId, 1);
    let answer: ReleaseAnswer;
    try {
      answer = await this.room.releasing(
        name,
        this.observed('release', () => this.store.release(request)),
        leaseStart,
      );
    } finally {
      // In the same turn as released() below: no renewal can settle in between.
      if (holdId) this.watchdog.releasing(holdId, -1);
    }
    if (!answer.held) {
      if (countGone) this.observer.tokenGone('release');
      throw notHeld(name);
    }
    this.observer.released(vanished);
    const result = { released: answer.freed, holdCount: answer.holdCount, holdId: answer.holdId };
    if (result.holdId) this.watchdog.released(result.holdId);
    return result;
  }

  /** Replaces the value a live grant publishes to watchers; resolves with its fencing token. */
  async setValue(name: string, token: string, value: string): Promise<{ fencingToken: string }> {
    this.refuseIf(this.store.refusal?.('setValue'));
    const set = await this.observed('setValue', () => this.store.setValue({ lock: this.lockOf(name), token, value }));
    if (!set) throw notHeld(name);
    return set;
  }

  /** Follows one lock: `listener` gets its state at once, then each change. Returns the way to stop. */
  watch(name: string, listener: WatchListener): () => void {
    this.refuseIf(this.store.refusal?.('watch'));
    return this.watchers.watch(name, listener);
  }

  /** Keeps renewing a grant until stopped or lost (the lease behind a Hold stream). */
  keep(request: KeepRequest, events: LeaseEvents, leaseStart: number, grantedMs?: number): KeptLease {
    const listener = {
      renewed: (lease: { leftMs: number; start: number }) => events.onRenewed(lease.leftMs, lease.start),
      settled: () => {},
      lost: (_lease: unknown, reason: LostReason, message: string) => events.onLost(reason, message),
    };
    return this.watchdog.keep(request, listener, null, leaseStart, grantedMs);
  }

  /** A lease group (lease-group.ts): the holds of one Hold, HoldSet or Session, kept together. */
  group(events: GroupEvents, options: GroupOptions): LeaseGroup {
    return new LeaseGroup(this, this.watchdog, events, options);
  }

  /** How many leases this engine is keeping alive. */
  get keptLeases(): number {
    return this.watchdog.size;
  }

  /** Counts of what this engine keeps, read when asked: waiting and renewing do no extra work for it. */
  stats(): EngineStats {
    const room = this.room.stats();
    const retrying = this.retries.stats();
    return { ...room, waiters: room.waiters + retrying.waiters, lines: room.lines + retrying.lines, ...this.watchdog.stats() };
  }

  /**
   * Whose waiters a release may hand the lock to directly: this server's, unless grants are
   * blocked (a quarantine: hand-offs wait like every grant), grants must be made on a checked
   * Cluster master, or replicas must acknowledge grants and this server has no waiters on the
   * lock (then the release needs no WAIT).
   */
  private handOffTarget(name: string): string {
    if (this.grantsBlocked(name)) return '';
    // A Cluster with the quarantine checks the master of every grant in the script
    // (expect-master); a release is not checked, so its hand-offs go through claim-4, which is.
    if (this.store.checksMaster(this.lockOf(name))) return '';
    if (this.store.confirmsWrites && !this.room.hasWaiters(name)) return '';
    return this.serverId;
  }

  /** Renews a live grant to now + ttlMs (0: its own lease length). */
  async renew(name: string, token: string, ttlMs: number): Promise<{ ttlMs: number; fencingToken?: string }> {
    this.checkTtl(ttlMs);
    const answer = await this.observed('renew', () => this.store.renew({ lock: this.lockOf(name), token, ttlMs, withFence: true }));
    if (!answer.renewed) {
      this.observer.tokenGone('renew');
      throw notHeld(name);
    }
    if (!answer.confirmed)
      throw new LockError('unavailable', `lock "${name}": the renewal was not confirmed by enough Redis replicas in time; count on the lease you had`);
    return answer.fencingToken === undefined ? { ttlMs: answer.leftMs } : { ttlMs: answer.leftMs, fencingToken: answer.fencingToken };
  }

  /** A lease longer than the server's longest would outlast a failover quarantine. */
  private checkTtl(ttlMs: number): void {
    const problem = ttlCapProblem(ttlMs, this.maxTtlMs);
    if (problem) throw new LockError('invalid', problem);
  }

  /** Resolves false if the deadline passes (or `signal` aborts) before grants may be made again. */
  private async untilGrantsResume(name: string, deadline: number, signal?: AbortSignal): Promise<boolean> {
    for (let wait = this.grantsResumeInMs(name); wait > 0; wait = this.grantsResumeInMs(name)) {
      const left = deadline - performance.now();
      if (left <= 0 || signal?.aborted) return false;
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, left, 1000)));
    }
    return !signal?.aborted;
  }

  async inspect(name: string): Promise<LockInfo> {
    const record = await this.observed('inspect', () => this.store.inspect(this.lockOf(name)));
    const holders = record.holders.sort((a, b) => (BigInt(a.fencingToken) < BigInt(b.fencingToken) ? -1 : 1));
    // A store without a queue knows no waiters: this server's retrying ones are the ones known.
    const waiters = record.waiters + this.retries.waitingOn(name);
    return { name, holders, waiters, fencingToken: record.fencingToken, limit: record.limit, grantsResumeInMs: this.grantsResumeInMs(name) };
  }

  /**
   * One SCAN step (never KEYS) through the locks that have holders or waiters, whose names start
   * with `namePrefix`: the names it found (possibly none, possibly repeated across steps) and the
   * cursor to go on from ('0': the walk is complete). Absent when the store cannot list its locks.
   */
  readonly scanLocks?: (cursor: string, count: number, namePrefix?: string) => Promise<LockScan>;

  async checkFencingToken(name: string, fencingToken: string): Promise<FenceCheck> {
    return this.observed('checkFencingToken', () => this.store.checkFencingToken({ lock: this.lockOf(name), fencingToken }));
  }

  /**
   * Shutdown: ends every wait with 'unavailable', and every kept lease as lost. Those leases are
   * left to run out (their clients may not hear of the end in time), unless they asked to be
   * released on disconnect.
   */
  async close(): Promise<void> {
    this.retries.closeAll(new LockError('unavailable', 'the server is shutting down'));
    await Promise.all([
      this.room.closeAll(new LockError('unavailable', 'the server is shutting down')),
      this.watchers.closeAll(new LockError('unavailable', 'the server is shutting down')),
      this.watchdog.endAll('server_shutdown', 'the server is shutting down'),
    ]);
  }
}
