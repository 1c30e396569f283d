// The lock engine: plain requests in, plain results out. Every change to lock state is one
// Lua script on one slot, run by the store (src/engine/store.ts: whichever topology it is);
// waiting lives in WaitRoom (a queue in storage) or RetryWait (a store without one), lease
// keeping in Watchdog. Knows nothing about gRPC or topologies; what a store cannot do, it asks.
import { ttlCapProblem } from '../config/bounds';
import { LockError, ReleaseCode, ScriptCode, ScriptFlag } from './errors';
import { lockKeys, lockNameOfKey, lockScanPattern, requestIdKey, scriptKeys } from './keys';
import { NO_OBSERVER, type EngineObserver } from './observer';
import { conflictError, grantOf, notHeld, requestIdReused } from './replies';
import { scriptKeyCount, type ScriptName } from './scripts';
import type { LockStore, Reply } from './store';
import type {
  AcquireParams,
  FenceCheck,
  Grant,
  HolderInfo,
  KeepRequest,
  KeptLease,
  LeaseEvents,
  LockInfo,
  LockScan,
  Mode,
  ReleaseOptions,
  ReleaseResult,
} from './types';
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
}

/** What this engine keeps in memory right now: all zero (and no timer) when it serves nobody. */
export type EngineStats = WaitRoomStats & WatchdogStats;

/** 128 random bits: the secret that releases and renews a grant. */
export function newToken(): string {
  return randomId(16);
}

/** Names one Hold stream's hold of a grant (not a secret: the token is). */
export function newHoldId(): string {
  return randomId(9);
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
    this.room = new WaitRoom(this, channels, { refreshMs: options.entryRefreshMs ?? 1000, onBackgroundError });
    this.retries = new RetryWait(this, channels);
    if (store.scan) this.scanLocks = (cursor, count, namePrefix) => this.scanStep(store.scan!.bind(store), cursor, count, namePrefix);
    this.watchers = new WatchRoom(this, channels, onBackgroundError);
    // The watchdog's give-back of a hold it kept: finding it gone already (its set was released
    // with ReleaseSet, its loss was counted by the renewal) is no lease expiry seen by a Release.
    this.watchdog = new Watchdog(store, this.prefix, (name, token, how) => this.release(name, token, how, false), onBackgroundError, this.observer);
  }

  /** Runs one lock script; Redis trouble becomes LockError('unavailable'). */
  run(script: ScriptName, name: string, args: (string | number)[]): Promise<Reply> {
    const keys = scriptKeys(lockKeys(this.prefix, name), scriptKeyCount(script));
    return this.observed(script, () => this.store.run(script, { keys, args }));
  }

  /**
   * Runs a script that grants or extends a lease; `confirmed` says whether the replicas the
   * topology asks for acknowledged it (always true when none is asked).
   */
  runConfirmed(script: ScriptName, name: string, args: (string | number)[]): Promise<{ reply: Reply; confirmed: boolean }> {
    const keys = scriptKeys(lockKeys(this.prefix, name), scriptKeyCount(script));
    return this.observed(script, () => this.store.runConfirmed(script, { keys, args }));
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
    return this.store.grantsBlocked(lockKeys(this.prefix, name).holders);
  }

  /** How long until grants of `name` resume (0: they may be made now). */
  grantsResumeInMs(name: string): number {
    return this.store.grantsResumeInMs(lockKeys(this.prefix, name).holders);
  }

  /** A grant the replicas did not confirm: give it back (if it is still ours) and say so. */
  async undoUnconfirmed(name: string, token: string, holdId: string): Promise<LockError> {
    await this.release(name, token, { holdId }).catch(() => {});
    return new LockError('unavailable', `lock "${name}": the grant was not confirmed by enough Redis replicas in time, so it was given back`);
  }

  channelOf(name: string): string {
    return lockKeys(this.prefix, name).channel;
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

  /** One run of acquire-4: granted, refused, or queued under waiterId (when not ''). */
  async attempt(params: AcquireParams, token: string, waiterId: string): Promise<{ grant?: Grant; queued?: boolean; nextExpiryMs: number }> {
    const { name, owner, ttlMs, mode, limit, requestId, holdId, value } = params;
    const blocked = this.grantsBlocked(name);
    if (blocked) throw new LockError('unavailable', `lock "${name}": ${blocked}`);
    const sentAt = performance.now();
    const args = [token, owner, ttlMs, mode, limit, requestId, waiterId, this.entryLeaseMs, holdId, this.maxWaitersPerLock, value];
    const { reply, confirmed } = await this.runConfirmed('acquire', name, args);
    switch (reply[0]) {
      case ScriptCode.GRANTED: {
        const grant = grantOf(reply, sentAt);
        if (!confirmed) throw await this.undoUnconfirmed(name, grant.token, holdId);
        return { grant, nextExpiryMs: -1 };
      }
      case ScriptCode.NOT_GRANTED:
        return { nextExpiryMs: Number(reply[1]) };
      case ScriptCode.QUEUED:
        return { queued: true, nextExpiryMs: Number(reply[1]) };
      default:
        throw conflictError(name, reply, limit);
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
    const keys = [requestIdKey(this.prefix, requestId)];
    const tied: unknown = await this.observed('requestId', () => this.store.run('requestId', { keys, args: [asked, rememberMs] }));
    if (tied !== ScriptFlag.YES) throw requestIdReused();
  }

  /**
   * Gives back one hold: the Hold stream's named hold, or one of the grant's. A Hold stream
   * served by this server whose hold it was ends as 'released'. `countGone`: a token that holds
   * nothing is counted as a lease expiry (a caller's Release).
   */
  async release(name: string, token: string, options: ReleaseOptions = {}, countGone = true): Promise<ReleaseResult> {
    const { holdId = '', vanished = false, lockDelayMs = 0, vanishedLeaseMs, why = '' } = options;
    const handOffTo = this.handOffTarget(name);
    const args = [token, holdId, vanished ? 1 : 0, lockDelayMs, vanishedLeaseMs ?? '', handOffTo, why];
    const leaseStart = performance.now();
    // With replica acknowledgement, a hand-off is a grant: the WAIT goes in the same round trip.
    const sent =
      handOffTo && this.store.confirmsWrites
        ? this.runConfirmed('release', name, args)
        : this.run('release', name, args).then((r) => ({ reply: r, confirmed: true }));
    const { reply } = await this.room.releasing(name, sent, leaseStart);
    if (reply[0] === ScriptCode.NOT_FOUND) {
      if (countGone) this.observer.tokenGone('release');
      throw notHeld(name);
    }
    this.observer.released(vanished);
    const result = { released: reply[0] === ReleaseCode.FREED, holdCount: Number(reply[1]), holdId: String(reply[2]) };
    if (result.holdId) this.watchdog.released(result.holdId);
    return result;
  }

  /** Replaces the value a live grant publishes to watchers; resolves with its fencing token. */
  async setValue(name: string, token: string, value: string): Promise<{ fencingToken: string }> {
    this.refuseIf(this.store.refusal?.('setValue'));
    const reply = await this.run('setValue', name, [token, value]);
    if (reply[0] === ScriptCode.NOT_FOUND) throw notHeld(name);
    return { fencingToken: String(reply[1]) };
  }

  /** Follows one lock: `listener` gets its state at once, then each change. Returns the way to stop. */
  watch(name: string, listener: WatchListener): () => void {
    this.refuseIf(this.store.refusal?.('watch'));
    return this.watchers.watch(name, listener);
  }

  /** Keeps renewing a grant until stopped or lost (the lease behind a Hold stream). */
  keep(request: KeepRequest, events: LeaseEvents, leaseStart: number, grantedMs?: number): KeptLease {
    return this.watchdog.keep(request, events, leaseStart, grantedMs);
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
    if (this.store.checksMaster(lockKeys(this.prefix, name).holders)) return '';
    if (this.store.confirmsWrites && !this.room.hasWaiters(name)) return '';
    return this.serverId;
  }

  /** Renews a live grant to now + ttlMs (0: its own lease length). */
  async renew(name: string, token: string, ttlMs: number): Promise<{ ttlMs: number; fencingToken?: string }> {
    this.checkTtl(ttlMs);
    const { reply, confirmed } = await this.runConfirmed('renew', name, [token, ttlMs, '', 1]); // '' no hold id, 1 with the fencing token
    if (reply[0] === ScriptCode.NOT_FOUND) {
      this.observer.tokenGone('renew');
      throw notHeld(name);
    }
    if (!confirmed)
      throw new LockError('unavailable', `lock "${name}": the renewal was not confirmed by enough Redis replicas in time; count on the lease you had`);
    return reply[2] === undefined ? { ttlMs: Number(reply[1]) } : { ttlMs: Number(reply[1]), fencingToken: String(reply[2]) };
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
    const reply = await this.run('inspect', name, []);
    const holders: HolderInfo[] = (reply.slice(3) as Reply[]).map((h) => ({
      owner: String(h[0]),
      fencingToken: String(h[1]),
      ttlMs: Number(h[2]),
      holdCount: Number(h[3]),
      mode: Number(h[4]) as Mode,
      value: String(h[5] ?? ''),
    }));
    holders.sort((a, b) => (BigInt(a.fencingToken) < BigInt(b.fencingToken) ? -1 : 1));
    // A store without a queue knows no waiters: this server's retrying ones are the ones known.
    const waiters = Number(reply[2]) + this.retries.waitingOn(name);
    return { name, holders, waiters, fencingToken: String(reply[0]), limit: Number(reply[1]), grantsResumeInMs: this.grantsResumeInMs(name) };
  }

  /**
   * One SCAN step (never KEYS) through the locks that have holders or waiters, whose names start
   * with `namePrefix`: the names it found (possibly none, possibly repeated across steps) and the
   * cursor to go on from ('0': the walk is complete). Absent when the store cannot list its locks.
   */
  readonly scanLocks?: (cursor: string, count: number, namePrefix?: string) => Promise<LockScan>;

  private async scanStep(scan: NonNullable<LockStore['scan']>, cursor: string, count: number, namePrefix = ''): Promise<LockScan> {
    const step = await scan(cursor, lockScanPattern(this.prefix, namePrefix), count);
    const names = new Set<string>();
    for (const key of step.keys) {
      const name = lockNameOfKey(this.prefix, key);
      if (name !== null) names.add(name);
    }
    return { names: [...names], cursor: step.cursor };
  }

  async checkFencingToken(name: string, fencingToken: string): Promise<FenceCheck> {
    const reply = await this.run('checkFencingToken', name, [fencingToken]);
    return {
      live: reply[0] === ScriptFlag.YES,
      ttlMs: Number(reply[1]),
      mode: Number(reply[2]) as Mode | 0,
      latestFencingToken: String(reply[3]),
    };
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
