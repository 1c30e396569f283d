// Keeps the leases of this server's Hold streams alive. One timer for all of them: at each tick
// every lease that is due is renewed in one pipelined round trip, never a timer and a round trip
// per lock. It never claims a lease it cannot vouch for: each lease carries a conservative local
// deadline (counted from when its last confirmed renewal was *sent*), and a lease whose renewal is
// not confirmed a margin before that deadline is reported lost, whatever Redis says later.
import calculateSlot from 'cluster-key-slot';
import { Cluster, type Redis } from 'ioredis';
import { fromRedisError, ScriptCode } from './errors';
import { lockKeys, scriptKeys } from './keys';
import { commandName, scriptKeyCount } from './scripts';

export type LostReason = 'expired' | 'taken' | 'backend_unavailable' | 'server_shutdown' | 'max_hold' | 'released';

export interface LeaseEvents {
  onRenewed(ttlMs: number): void;
  onLost(reason: LostReason, message: string): void;
}

export interface KeepRequest {
  name: string;
  token: string;
  ttlMs: number;
  /** 0 for no cap. */
  maxHoldMs: number;
}

interface Lease extends KeepRequest, LeaseEvents {
  /** The renew script's keys and their Cluster slot, worked out once rather than per renewal. */
  keys: string[];
  slot: number;
  /** performance.now() values. */
  renewAt: number;
  lostAt: number;
  maxHoldAt: number;
  inflight: boolean;
  ended: boolean;
}

export interface KeptLease {
  /** Stops renewing and returns the lease to the engine (the caller releases the grant). */
  stop(): void;
}

/** How much of the lease the watchdog lets pass before it renews. */
const RENEW_FRACTION = 1 / 3;

export class Watchdog {
  private readonly leases = new Set<Lease>();
  private readonly byToken = new Map<string, Lease>();
  private timer?: NodeJS.Timeout;
  private tickMs = 100;

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly prefix: string,
    private readonly release: (name: string, token: string) => Promise<unknown>,
    private readonly onBackgroundError: (err: unknown) => void,
  ) {}

  get size(): number {
    return this.leases.size;
  }

  /** Starts keeping a lease whose grant was confirmed at `confirmedAt` (performance.now()). */
  keep(request: KeepRequest, events: LeaseEvents, confirmedAt: number): KeptLease {
    const keys = scriptKeys(lockKeys(this.prefix, request.name), scriptKeyCount('renew'));
    const lease: Lease = {
      ...request,
      ...events,
      keys,
      slot: calculateSlot(keys[0]),
      renewAt: confirmedAt + request.ttlMs * RENEW_FRACTION,
      lostAt: confirmedAt + request.ttlMs - safetyMargin(request.ttlMs),
      maxHoldAt: request.maxHoldMs > 0 ? confirmedAt + request.maxHoldMs : Infinity,
      inflight: false,
      ended: false,
    };
    this.leases.add(lease);
    this.byToken.set(lease.token, lease);
    this.tickMs = Math.min(this.tickMs, tickFor(lease.ttlMs));
    this.arm();
    return { stop: () => this.forget(lease) };
  }

  /** The grant was released through this server: its stream ends as 'released'. */
  released(token: string): void {
    const lease = this.byToken.get(token);
    if (lease) this.end(lease, 'released', 'the lock was released with its token');
  }

  /** Ends every lease as lost for `reason`, releasing each grant first (shutdown). */
  async endAll(reason: LostReason, message: string): Promise<void> {
    const leases = [...this.leases];
    // Forget them first, so that these releases are not taken for a client's own Release.
    for (const lease of leases) this.forget(lease);
    await Promise.all(leases.map((lease) => this.release(lease.name, lease.token).catch(() => {})));
    for (const lease of leases) lease.onLost(reason, message);
  }

  private forget(lease: Lease): void {
    lease.ended = true;
    this.leases.delete(lease);
    if (this.byToken.get(lease.token) === lease) this.byToken.delete(lease.token);
    if (this.leases.size === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.tickMs = 100;
    }
  }

  private end(lease: Lease, reason: LostReason, message: string): void {
    if (lease.ended) return;
    this.forget(lease);
    lease.onLost(reason, message);
  }

  private arm(): void {
    if (this.timer || this.leases.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.tick();
      this.arm();
    }, this.tickMs);
  }

  private tick(): void {
    const now = performance.now();
    const due: Lease[] = [];
    for (const lease of this.leases) {
      if (now >= lease.maxHoldAt) {
        this.end(lease, 'max_hold', `the hold reached its max hold time of ${lease.maxHoldMs} ms`);
        this.release(lease.name, lease.token).catch(this.onBackgroundError);
      } else if (now >= lease.lostAt) {
        this.end(lease, 'backend_unavailable', 'no renewal could be confirmed before the lease would end');
        this.release(lease.name, lease.token).catch(() => {});
      } else if (now >= lease.renewAt && !lease.inflight) {
        due.push(lease);
      }
    }
    if (due.length > 0) void this.renew(due, now);
  }

  /** One pipelined round trip per Redis node: a cluster pipeline must stay on one node. */
  private async renew(due: Lease[], sentAt: number): Promise<void> {
    const byNode = new Map<string, Lease[]>();
    for (const lease of due) {
      lease.inflight = true;
      const node = nodeOf(this.redis, lease.slot);
      const group = byNode.get(node);
      if (group) group.push(lease);
      else byNode.set(node, [lease]);
    }
    await Promise.all([...byNode.values()].map((group) => this.renewOnOneNode(group, sentAt)));
  }

  private async renewOnOneNode(due: Lease[], sentAt: number): Promise<void> {
    const pipeline = this.redis.pipeline();
    const renew = (pipeline as unknown as Record<string, (...a: unknown[]) => void>)[commandName('renew')];
    for (const lease of due) renew.call(pipeline, ...lease.keys, lease.token, lease.ttlMs);
    let results: [Error | null, unknown][];
    try {
      results = (await pipeline.exec()) ?? [];
    } catch (err) {
      results = due.map(() => [err as Error, null]);
    }
    let failure: Error | null = null;
    due.forEach((lease, i) => {
      lease.inflight = false;
      const [err, reply] = results[i] ?? [new Error('no reply'), null];
      // A failed renewal is tried again at the next tick; lostAt decides when to give up.
      if (err || !reply) failure ??= err ?? new Error('no reply');
      else this.settle(lease, reply as number[], sentAt);
    });
    if (failure) this.onBackgroundError(fromRedisError(failure));
  }

  private settle(lease: Lease, reply: number[], sentAt: number): void {
    if (lease.ended) {
      // Declared lost (or stopped) while this renewal was on its way: nobody counts on it now.
      if (reply[0] === 1) this.release(lease.name, lease.token).catch(() => {});
      return;
    }
    if (reply[0] === ScriptCode.NOT_FOUND) {
      if (reply[1] === 1) this.end(lease, 'taken', 'the grant is gone and someone else holds the lock now');
      else this.end(lease, 'expired', 'the grant is gone (it expired or was released)');
      return;
    }
    lease.renewAt = sentAt + lease.ttlMs * RENEW_FRACTION;
    lease.lostAt = sentAt + lease.ttlMs - safetyMargin(lease.ttlMs);
    lease.onRenewed(Number(reply[1]));
  }
}

/** The node serving a slot ('' for a single Redis). */
function nodeOf(redis: Redis | Cluster, slot: number): string {
  if (!(redis instanceof Cluster)) return '';
  return redis.slots[slot]?.[0] ?? '';
}

/** Lost is declared this long before the lease would end, so nobody is told they hold a lock Redis dropped. */
function safetyMargin(ttlMs: number): number {
  return Math.min(1000, Math.max(5, ttlMs / 10));
}

function tickFor(ttlMs: number): number {
  return Math.max(5, Math.min(100, Math.floor(ttlMs / 10)));
}
