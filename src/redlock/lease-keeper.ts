// Keeps the leases of Redlock mode's Hold streams: one timer for all of them renews each that is
// due through a majority round (RedlockEngine's renewal), and a lease whose renewal is not
// confirmed before the validity it was last told runs out is reported lost.
import { DueSchedule } from '../engine/due-schedule';
import type { EngineObserver } from '../engine/observer';
import type { KeepRequest, KeptLease, LeaseEvents, LostReason } from '../engine/types';

/** How often the one renewal timer looks for kept leases that are due. */
const RENEWAL_TICK_MS = 50;

/** One majority renewal: the validity it confirmed from `at`, or whether the vote is gone for good. */
export type RenewalRound = { validity: number; at: number } | { gone: 'expired' | 'released' | false };

export interface LeaseRounds {
  renew(name: string, token: string, ttlMs: number): Promise<RenewalRound>;
  /** Asks every master to forget the grant. */
  forget(name: string, token: string): Promise<unknown>;
}

interface Kept extends KeepRequest {
  events: LeaseEvents;
  /** performance.now() when the renewal timer should next renew it. */
  renewAt: number;
  inflight: boolean;
  /** performance.now() by which a renewal must be confirmed, or the lease is reported lost. */
  lostAt: number;
  maxHoldAt: number;
  ended: boolean;
}

export class LeaseKeeper {
  private readonly kept = new Map<string, Kept>();
  private timer?: NodeJS.Timeout;
  /** When each kept lease is next due for renewal. */
  private readonly renewals = new DueSchedule<Kept>();

  constructor(
    private readonly rounds: LeaseRounds,
    private readonly observer: EngineObserver,
  ) {}

  get size(): number {
    return this.kept.size;
  }

  get timerArmed(): boolean {
    return this.timer !== undefined;
  }

  /** Whether the grant of `token` is kept here and asked to be freed on disconnect. */
  releasesOnDisconnect(token: string): boolean {
    return this.kept.get(token)?.releaseOnDisconnect ?? false;
  }

  /** The hold of `token` kept here, if any, ended as released by its holder; its hold id ('' if none). */
  released(token: string): string {
    const lease = this.kept.get(token);
    if (!lease) return '';
    this.end(lease, 'released', 'the hold was released with its token');
    return lease.holdId;
  }

  keep(request: KeepRequest, events: LeaseEvents, leaseStart: number, grantedMs = request.ttlMs): KeptLease {
    const lease: Kept = {
      ...request,
      events,
      lostAt: leaseStart + grantedMs, // grantedMs is the validity: drift already taken off
      maxHoldAt: request.maxHoldMs > 0 ? leaseStart + request.maxHoldMs : Infinity,
      renewAt: 0,
      inflight: false,
      ended: false,
    };
    this.kept.set(request.token, lease);
    this.schedule(lease, request.ttlMs / 3);
    return {
      letGo: async () => {
        if (!this.stop(lease)) return;
        await this.rounds.forget(lease.name, lease.token);
        this.observer.released(false);
      },
      abandon: async () => {
        // Vanished: the lock stays closed until the votes run out on their own (the lease the
        // client was told of ends first), unless it asked to be freed on disconnect.
        if (!this.stop(lease)) return;
        if (lease.releaseOnDisconnect) await this.rounds.forget(lease.name, lease.token);
        this.observer.released(true);
      },
    };
  }

  /** Ends every kept lease as lost (shutdown). */
  endAll(reason: LostReason, message: string): void {
    for (const lease of [...this.kept.values()]) this.end(lease, reason, message);
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(lease: Kept, inMs: number): void {
    lease.renewAt = performance.now() + inMs;
    this.renewals.set(lease, lease.renewAt);
    this.arm();
  }

  /** One timer for every kept lease (not one per lease), set while any is kept. */
  private arm(): void {
    if (this.timer || this.kept.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.renewDue();
      this.arm();
    }, RENEWAL_TICK_MS);
  }

  private renewDue(): void {
    const now = performance.now();
    for (const lease of this.renewals.takeDue(now)) {
      if (lease.inflight) {
        this.renewals.set(lease, now + RENEWAL_TICK_MS);
        continue;
      }
      lease.inflight = true;
      void this.renewKept(lease).finally(() => {
        lease.inflight = false;
        // renewKept sets the next renewal, unless it ended the lease or failed unexpectedly: then try again soon.
        if (!lease.ended && lease.renewAt <= now) this.schedule(lease, 100);
      });
    }
  }

  private async renewKept(lease: Kept): Promise<void> {
    if (lease.ended) return;
    const now = performance.now();
    if (now >= lease.maxHoldAt) return this.end(lease, 'max_hold', `the hold reached its max hold time (${lease.maxHoldMs} ms)`);
    const ttl = Math.max(1, Math.min(lease.ttlMs, Math.ceil(lease.maxHoldAt - now)));
    const result = await this.rounds.renew(lease.name, lease.token, ttl);
    if (lease.ended) return;
    if ('validity' in result) {
      lease.lostAt = result.at + result.validity;
      lease.events.onRenewed(Math.floor(result.validity), result.at);
      return this.schedule(lease, lease.ttlMs / 3);
    }
    if (result.gone === 'released') return this.end(lease, 'released', 'the hold was released with its token');
    if (result.gone) return this.end(lease, 'expired', 'the grant is gone from a majority of the Redis masters (it expired)');
    if (performance.now() >= lease.lostAt - 100) {
      return this.end(lease, 'backend_unavailable', 'a majority of the Redis masters did not confirm a renewal before the lease ran out');
    }
    this.schedule(lease, 100); // try again soon: the lease still runs
  }

  /** Stops renewing; true when it was still kept. */
  private stop(lease: Kept): boolean {
    if (lease.ended) return false;
    lease.ended = true;
    this.kept.delete(lease.token);
    this.renewals.delete(lease);
    return true;
  }

  private end(lease: Kept, reason: LostReason, message: string): void {
    if (!this.stop(lease)) return;
    if (reason !== 'released') this.observer.leaseLost(reason);
    lease.events.onLost(reason, message);
  }
}
