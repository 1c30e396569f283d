// Keeps the leases of this server's Hold streams alive. One timer for all of them: at each tick
// every lease that is due is renewed in one pipelined round trip per Redis node, never a timer
// and a round trip per lock, and a tick looks only at the leases with something due
// (due-schedule.ts). The store batches each node's renewals as its topology allows
// (LockStore.renewMany: one Redis renews up to 100 leases of one Cluster slot per script call).
// It never claims a lease it cannot vouch for: each lease carries a conservative local deadline
// (counted from when its last confirmed renewal was *sent*), and a lease whose renewal is not
// confirmed a margin before that deadline is reported lost, whatever Redis says later.
//
// Only the holder's own word frees its lock at once (letGo). Every other end (the holder
// vanished, max hold, Redis out of reach, shutdown) gives its hold back as 'vanished': its client
// may still count on the lease, so the lock stays closed until that lease has run out.
import { DueSchedule, type Schedulable } from './due-schedule';
import { NO_OBSERVER, type EngineObserver } from './observer';
import type { LockRef, LockStore, RenewAnswer, RenewRequest } from './store';
import type { KeepRequest, KeptLease, LostReason, ReleaseOptions, VanishReason } from './types';

/**
 * Who hears of a kept lease: its lease group (lease-group.ts). One listener serves every lease
 * of its group, so a lease carries no closures of its own.
 */
export interface LeaseListener<T> {
  /** A renewal of `lease` was confirmed: its lease now ends no earlier than lease.start + lease.leftMs. */
  renewed(lease: HeldLease<T>): void;
  /** Every renewal of one round trip is settled: the listener may report what they changed. */
  settled(): void;
  /** The lease is over (lost, or released with its token: 'released'); the watchdog no longer keeps it. */
  lost(lease: HeldLease<T>, reason: LostReason, message: string): void;
}

/** A kept lease as its listener sees it; `tag` is the listener's own (a group: the set it belongs to). */
export interface HeldLease<T> extends KeptLease {
  readonly name: string;
  readonly token: string;
  readonly holdId: string;
  readonly fencingToken: string;
  readonly tag: T;
  /** performance.now() when its latest confirmed renewal (or its grant) was sent. */
  readonly start: number;
  /** The lease that renewal (or grant) left: the lease ends no earlier than start + leftMs. */
  readonly leftMs: number;
  /** No longer kept (given back, lost or released). */
  readonly ended: boolean;
}

/**
 * One kept lease. A class, so that every lease shares one shape and its letGo/abandon are not
 * closures of its own: a server may keep tens of thousands (docs/sessions.md, "Caps").
 */
class Lease implements KeepRequest, HeldLease<unknown>, LockRef, Schedulable {
  readonly name: string;
  readonly fencingToken: string;
  readonly token: string;
  readonly holdId: string;
  readonly ttlMs: number;
  readonly maxHoldMs: number;
  readonly lockDelayMs: number;
  readonly releaseOnDisconnect: boolean;
  /** performance.now() values. */
  readonly keptSince: number;
  renewAt: number;
  lostAt: number;
  readonly maxHoldAt: number;
  /** The latest lease end this stream's client was told of (sent at + lease left): its lease ends no later. */
  toldUntil: number;
  start: number;
  leftMs: number;
  /** The watchdog's schedule's counter and due time (due-schedule.ts). */
  dueVersion = 0;
  dueAt = 0;
  /** LockRef.storeNote: the store's, kept for the lease's life. */
  storeNote: unknown = undefined;
  /** The lease asked for by the renewal in flight (ms). */
  askedMs = 0;
  /** The confirmed lease already runs to the max hold time: no renewal can extend it. */
  final = false;
  inflight = false;
  ended = false;
  /** Releases of this hold on their way through this server: a renewal finding it gone waits for their answer. */
  releasing = 0;

  constructor(
    request: KeepRequest,
    readonly listener: LeaseListener<unknown>,
    readonly tag: unknown,
    /**
     * Its lock's key prefix: the lease is itself the LockRef its renewals name (one object per
     * lease, so a store may remember what it works out from it, with no second object per lock).
     */
    readonly prefix: string,
    confirmedAt: number,
    grantedMs: number,
    private readonly stop: (lease: Lease, vanished: boolean) => Promise<void>,
  ) {
    this.name = request.name;
    this.fencingToken = request.fencingToken ?? '';
    this.token = request.token;
    this.holdId = request.holdId;
    this.ttlMs = request.ttlMs;
    this.maxHoldMs = request.maxHoldMs;
    this.lockDelayMs = request.lockDelayMs;
    this.releaseOnDisconnect = request.releaseOnDisconnect;
    this.keptSince = confirmedAt;
    this.renewAt = confirmedAt + request.ttlMs * RENEW_FRACTION;
    this.lostAt = confirmedAt + request.ttlMs - safetyMargin(request.ttlMs);
    this.maxHoldAt = request.maxHoldMs > 0 ? confirmedAt + request.maxHoldMs : Infinity;
    this.toldUntil = confirmedAt + grantedMs;
    this.start = confirmedAt;
    this.leftMs = grantedMs;
    this.final = runsToCap(this, confirmedAt + request.ttlMs);
  }

  letGo(): Promise<void> {
    return this.stop(this, false);
  }

  abandon(): Promise<void> {
    return this.stop(this, !this.releaseOnDisconnect);
  }
}

export interface WatchdogStats {
  /** Leases being renewed (one per open, granted Hold stream). */
  keptLeases: number;
  /** Holds findable by hold_id; equal to keptLeases unless one was forgotten in one place only. */
  namedHolds: number;
  /** The one renewal timer is set (it is whenever a lease is kept). */
  timerArmed: boolean;
}

type Release = (name: string, token: string, options: ReleaseOptions) => Promise<unknown>;

/** How far this server's and Redis's clocks may disagree on the length of an interval. */
const CLOCK_RATE_ALLOWANCE = 1e-3;

/** How much of the lease the watchdog lets pass before it renews. */
const RENEW_FRACTION = 1 / 3;

export class Watchdog {
  private readonly leases = new Set<Lease>();
  private readonly byHold = new Map<string, Lease>();
  private readonly schedule = new DueSchedule<Lease>();
  private timer?: NodeJS.Timeout;
  private tickMs = 100;
  /** Every lease's way to stop itself: one function for all of them. */
  private readonly stopLease = (lease: Lease, vanished: boolean) => this.stop(lease, vanished);

  constructor(
    private readonly store: LockStore,
    private readonly prefix: string,
    private readonly release: Release,
    private readonly onBackgroundError: (err: unknown) => void,
    private readonly observer: EngineObserver = NO_OBSERVER,
  ) {}

  get size(): number {
    return this.leases.size;
  }

  /** What this watchdog keeps, for GetServerStats: counted when asked, nothing on the renewal path. */
  stats(): WatchdogStats {
    return { keptLeases: this.leases.size, namedHolds: this.byHold.size, timerArmed: this.timer !== undefined };
  }

  /**
   * Starts keeping a lease whose grant was confirmed at `confirmedAt` (performance.now(), sent
   * before the script ran) for `grantedMs` (the lease left the client was told).
   */
  keep<T>(request: KeepRequest, listener: LeaseListener<T>, tag: T, confirmedAt: number, grantedMs = request.ttlMs): HeldLease<T> {
    const lease = new Lease(request, listener as LeaseListener<unknown>, tag, this.prefix, confirmedAt, grantedMs, this.stopLease);
    this.leases.add(lease);
    this.reschedule(lease);
    this.byHold.set(lease.holdId, lease);
    this.tickMs = Math.min(this.tickMs, tickFor(lease.ttlMs));
    this.arm();
    return lease as HeldLease<T>;
  }

  /**
   * A release of `holdId` starts (+1) or has its answer (-1). Meanwhile a renewal that finds the
   * hold gone was overtaken by that release: released() ends the lease as 'released', not as
   * expired (a released set member must not read as lost).
   */
  releasing(holdId: string, by: 1 | -1): void {
    const lease = this.byHold.get(holdId);
    if (lease) lease.releasing += by;
  }

  /** The hold was given back with Release (through this server): its stream ends as 'released'. */
  released(holdId: string): void {
    const lease = this.byHold.get(holdId);
    if (lease) this.end(lease, 'released', 'the hold was released with its token');
  }

  /** Ends every lease as lost for `reason`, giving each hold back as vanished first (shutdown). */
  async endAll(reason: LostReason, message: string): Promise<void> {
    const leases = [...this.leases];
    await Promise.all(leases.map((lease) => this.stop(lease, !lease.releaseOnDisconnect, 'server_shutdown')));
    const after = (lease: Lease) => (lease.releaseOnDisconnect ? 'the lock was released' : 'the lock stays held until its lease runs out');
    for (const lease of leases) this.lost(lease, reason, `${message}; ${after(lease)}`);
  }

  /** Stops renewing and gives the hold back, once; `vanished` keeps the lock closed until the lease has run out. */
  private async stop(lease: Lease, vanished: boolean, why?: VanishReason): Promise<void> {
    if (lease.ended) return;
    this.forget(lease);
    await this.giveBack(lease, vanished, why).catch(() => {
      // Redis is out of reach: the lease runs out by itself.
    });
  }

  /** `why` tells watchers why a vanished hold ended (default: its connection was lost). */
  private giveBack(lease: Lease, vanished: boolean, why?: VanishReason): Promise<unknown> {
    const { holdId, lockDelayMs } = lease;
    if (!vanished) return this.release(lease.name, lease.token, { holdId });
    // The lock stays closed for as long as this stream's client may count on its lease (it counts
    // from messages this server sent), not for the grant's whole lease: a reentrant Acquire of
    // the same grant may have made that much longer. A little extra covers clock rates.
    const leftMs = Math.max(0, lease.toldUntil - performance.now());
    const vanishedLeaseMs = Math.ceil(leftMs * (1 + CLOCK_RATE_ALLOWANCE)) + 2;
    return this.release(lease.name, lease.token, { holdId, vanished: true, vanishedLeaseMs, lockDelayMs, why });
  }

  private forget(lease: Lease): void {
    lease.ended = true;
    this.leases.delete(lease);
    this.schedule.delete(lease);
    if (this.byHold.get(lease.holdId) === lease) this.byHold.delete(lease.holdId);
    if (this.leases.size === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.tickMs = 100;
      this.schedule.clear();
    }
  }

  private end(lease: Lease, reason: LostReason, message: string): void {
    if (lease.ended) return;
    this.forget(lease);
    this.lost(lease, reason, message);
  }

  private lost(lease: Lease, reason: LostReason, message: string): void {
    if (reason !== 'released') this.observer.leaseLost(reason);
    lease.listener.lost(lease, reason, message);
  }

  private arm(): void {
    if (this.timer || this.leases.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.tick();
      this.arm();
    }, this.tickMs);
  }

  /** Sets the next moment the lease needs the watchdog. */
  private reschedule(lease: Lease): void {
    if (lease.ended) return;
    // In flight, only its end can come due; otherwise its renewal too, unless no renewal can extend it.
    const renewAt = lease.inflight || lease.final ? Infinity : lease.renewAt;
    this.schedule.set(lease, Math.min(renewAt, lease.lostAt, lease.maxHoldAt));
  }

  private tick(): void {
    const now = performance.now();
    const due: Lease[] = [];
    for (const lease of this.schedule.takeDue(now)) {
      if (now >= lease.maxHoldAt || (lease.final && now >= lease.lostAt)) {
        this.end(lease, 'max_hold', `the hold reached its max hold time of ${lease.maxHoldMs} ms`);
        this.giveBack(lease, !lease.releaseOnDisconnect, 'max_hold').catch(this.onBackgroundError);
      } else if (now >= lease.lostAt) {
        this.end(lease, 'backend_unavailable', 'no renewal could be confirmed before the lease would end');
        this.giveBack(lease, !lease.releaseOnDisconnect, 'backend_unavailable').catch(() => {});
      } else {
        if (now >= lease.renewAt && !lease.inflight && !lease.final) {
          lease.inflight = true;
          due.push(lease);
        }
        this.reschedule(lease);
      }
    }
    if (due.length > 0) void this.renew(due, now);
  }

  /** One round trip per Redis node (a cluster pipeline must stay on one node): store.renewMany batches it. */
  private async renew(due: Lease[], sentAt: number): Promise<void> {
    const byNode = new Map<string, Lease[]>();
    for (const lease of due) {
      const node = this.store.nodeOf(lease);
      const leases = byNode.get(node);
      if (leases) leases.push(lease);
      else byNode.set(node, [lease]);
    }
    await Promise.all([...byNode.values()].map((leases) => this.renewOnOneNode(leases, sentAt)));
  }

  private async renewOnOneNode(leases: Lease[], sentAt: number): Promise<void> {
    const requests = leases.map((lease) => renewalOf(lease, sentAt));
    const probe = this.observer.scriptStart('renewBatch');
    // One replica acknowledgement for the whole round trip; without it no renewal of it counts.
    const answers = await this.store.renewMany(requests);
    let failure: Error | null = null;
    for (const answer of answers) if (answer instanceof Error) failure ??= answer;
    this.observer.scriptEnd(probe, 'renewBatch', failure !== null);
    const renewed = new Set<LeaseListener<unknown>>();
    for (let i = 0; i < leases.length; i++) {
      const lease = leases[i];
      const answer = answers[i] ?? new Error('no reply');
      lease.inflight = false;
      // A failed renewal is tried again at the next tick; lostAt decides when to give up.
      if (!(answer instanceof Error) && this.settle(lease, answer, sentAt)) renewed.add(lease.listener);
      this.reschedule(lease);
    }
    for (const listener of renewed) listener.settled();
    if (failure) this.onBackgroundError(failure);
  }

  /** What the store answered for the lease's renewal. True when it renewed the lease. */
  private settle(lease: Lease, answer: RenewAnswer, sentAt: number): boolean {
    // Ended while this renewal was on its way: the hold is being given back, and a renewal that
    // runs after that finds the hold gone (renewals check the hold id), so nothing is extended.
    if (lease.ended) return false;
    if (!answer.renewed) {
      if (lease.releasing > 0) return false; // released() ends it, once the release has its answer
      // Just reconnected: whether a failover took the grant is known in a moment; ask again then.
      if (this.store.verifying(lease) && answer.why !== 'hold_released') return false;
      if (answer.why === 'hold_released') this.end(lease, 'released', 'the hold was released with its token');
      else if (this.store.lastFailoverAt(lease) > lease.keptSince) {
        this.end(lease, 'failover', 'the grant was lost when Redis failed over to a replica that did not have it');
      } else if (answer.why === 'taken') this.end(lease, 'taken', 'the grant is gone and someone else holds the lock now');
      else this.end(lease, 'expired', 'the grant is gone (it expired or was released)');
      return false;
    }
    const { leftMs } = answer;
    lease.renewAt = sentAt + lease.ttlMs * RENEW_FRACTION;
    lease.lostAt = sentAt + leftMs - safetyMargin(lease.ttlMs);
    // A renewal that asked for the rest of the max hold time is the last, whatever a store takes
    // off what it confirms (Redlock's clock drift allowance).
    lease.final = runsToCap(lease, sentAt + Math.max(leftMs, lease.askedMs));
    lease.toldUntil = Math.max(lease.toldUntil, sentAt + leftMs);
    lease.start = sentAt;
    lease.leftMs = leftMs;
    lease.listener.renewed(lease);
    return true;
  }
}

/** The lease's renewal, of its own hold, never past its max hold time. */
function renewalOf(lease: Lease, sentAt: number): RenewRequest {
  lease.askedMs = renewalTtl(lease, sentAt);
  return { lock: lease, token: lease.token, ttlMs: lease.askedMs, holdId: lease.holdId };
}

/** A renewal never carries a lease past the hold's max hold time, so both end together. */
function renewalTtl(lease: Lease, now: number): number {
  return Math.max(1, Math.min(lease.ttlMs, Math.ceil(lease.maxHoldAt - now)));
}

/** Whether a lease confirmed to last until `endsAt` reaches the hold's max hold time. */
function runsToCap(lease: Lease, endsAt: number): boolean {
  return endsAt >= lease.maxHoldAt - 1;
}

/** Lost is declared this long before the lease would end, so nobody is told they hold a lock Redis dropped. */
function safetyMargin(ttlMs: number): number {
  return Math.min(1000, Math.max(5, ttlMs / 10));
}

function tickFor(ttlMs: number): number {
  return Math.max(5, Math.min(100, Math.floor(ttlMs / 10)));
}
