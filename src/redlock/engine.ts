// Redlock mode: a lock is granted by a majority of N independent Redis masters (no
// replication between them), within the lease's validity, behind the same gRPC API.
//
// Grant: every voting node runs redlock-acquire-2 in parallel with a short per-node timeout.
// With a majority of votes, the grant's fencing token is written back to a majority
// (redlock-fence-2) before anyone is told of it; otherwise every node is asked to forget it.
// The client is told the validity left: ttl minus the time the rounds took minus a drift
// allowance, counted from when the last round answered.
//
// Why fencing tokens never go backwards (ABD-style: read from a majority, write to a majority):
//   Let G1 be a reported grant with token F1, and G2 a later grant of the same lock. G1 was
//   reported only after F1 was written on a majority W1 of nodes, each of which still held G1's
//   vote when it took the write. G2 needs the votes of a majority V2, and a node votes for G2
//   only once G1's vote there has expired or been released, so after it took F1 if it is in W1.
//   Two majorities of one N always share a node: some node in W1 ∩ V2 answers G2's vote with a
//   highest token of at least F1, and G2's token is max(highest seen + 1, Redis TIME in µs) > F1.
//   This holds as long as a node keeps what it wrote: a node that restarts without persistence
//   forgets both its votes and its tokens, so it votes for nothing until every lease it may
//   have granted has run out (the restart watch in nodes.ts), and the TIME floor keeps tokens
//   rising across such a restart while clocks agree within that wait.
// Mutual exclusion assumes what Redlock assumes: the nodes' clocks run at about the same rate
// (the drift allowance covers 1% of the lease), and no process pauses longer than the validity
// left (the SDKs' conservative deadline, counted from the send time, covers the client's side).
import { randomBytes } from 'node:crypto';
import type { LockBackend } from '../engine/backend';
import type { EngineStats } from '../engine/engine';
import { ttlCapProblem } from '../config/bounds';
import { LockError, RedlockCode } from '../engine/errors';
import { DueSchedule } from '../engine/due-schedule';
import { redlockKeys } from '../engine/keys';
import { NO_OBSERVER, type AcquireOutcome, type EngineObserver } from '../engine/observer';
import { notHeld } from '../engine/replies';
import { Mode, type AcquireParams, type FenceCheck, type Grant, type LockInfo, type ReleaseOptions, type ReleaseResult } from '../engine/types';
import type { KeepRequest, KeptLease, LeaseEvents, LostReason } from '../engine/types';
import { connectNodes, type RedlockNode, type RedlockScript, type Reply } from './nodes';
import { acquireRefusal, refusal } from './refusals';

export interface RedlockOptions {
  urls: string[];
  keyPrefix: string;
  /** Longest lease granted; also how long a restarted node sits out. */
  maxTtlMs: number;
  quarantineMarginMs: number;
  /** Per-node answer timeout. */
  nodeTimeoutMs: number;
  /**
   * The masters persist every write before answering (appendfsync always), so a restarted one
   * remembers its votes: it votes again at once. Without that, a restart without persistence
   * could hand a held lock to a second client (the test's negative control shows it).
   */
  trustRestarts?: boolean;
  epochKey: string;
  onQuarantine?: (url: string, why: string, ms: number) => void;
  onChange?: () => void;
  /** Told of lock events and timings (metrics, traces), as the Redis engine tells them; none by default. */
  observer?: EngineObserver;
}

/** How long a node remembers a lock's highest fencing token after its latest grant. */
const FENCE_RETAIN_MS = 7 * 24 * 3600 * 1000;
/** A node's clock may run this much faster than the server's (Redlock's clock drift factor). */
const CLOCK_DRIFT = 0.01;
/** The first retry after a refusal; doubles up to MAX_BACKOFF_MS, always with jitter. */
const MIN_BACKOFF_MS = 10;
const MAX_BACKOFF_MS = 250;
/** How often the one renewal timer looks for kept leases that are due. */
const RENEWAL_TICK_MS = 50;

function drift(ttlMs: number): number {
  return Math.ceil(ttlMs * CLOCK_DRIFT) + 2;
}

function tooLong(ttlMs: number, maxTtlMs: number): void {
  const problem = ttlCapProblem(ttlMs, maxTtlMs);
  if (problem) throw new LockError('invalid', problem);
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

export class RedlockEngine implements LockBackend {
  private readonly nodes: RedlockNode[];
  private readonly closeNodes: () => void;
  readonly quorum: number;
  /** Wake-ups by channel: each sleeping waiter's resolver. */
  private readonly wakers = new Map<string, Set<() => void>>();
  /** Waiting calls by channel (awake or asleep): the channel is subscribed while any remain. */
  private readonly listeners = new Map<string, number>();
  private readonly kept = new Map<string, Kept>();
  private renewalTimer?: NodeJS.Timeout;
  /** When each kept lease is next due for renewal. */
  private readonly renewals = new DueSchedule<Kept>();
  /** The engines sharing these node connections (wake-ups go to each; it ignores others' channels). */
  private readonly siblings = new Set<RedlockEngine>();
  private readonly observer: EngineObserver;

  /**
   * `shared`: the node connections of another engine (one per namespace, one set of connections):
   * closing this engine then leaves them open.
   */
  constructor(
    private readonly options: RedlockOptions,
    shared?: RedlockEngine,
  ) {
    if (shared) {
      this.nodes = shared.nodes;
      this.closeNodes = () => {};
      shared.siblings.add(this);
    } else {
      const connected = connectNodes(options.urls, {
        timeoutMs: options.nodeTimeoutMs,
        epochKey: options.epochKey,
        quarantineMs: options.trustRestarts ? 0 : options.maxTtlMs + options.quarantineMarginMs,
        onMessage: (channel) => {
          for (const engine of this.siblings) engine.wake(channel);
        },
        onQuarantine: options.onQuarantine,
        onChange: options.onChange,
      });
      this.nodes = connected.nodes;
      this.closeNodes = connected.close;
      this.siblings.add(this);
    }
    this.quorum = Math.floor(this.nodes.length / 2) + 1;
    this.observer = options.observer ?? NO_OBSERVER;
  }

  /** An engine for another key prefix (a namespace) on the same masters and connections. */
  withPrefix(keyPrefix: string): RedlockEngine {
    return new RedlockEngine({ ...this.options, keyPrefix }, this);
  }

  /** Why no grant can be made now (fewer voting nodes than a majority), or null. */
  grantsBlocked(): string | null {
    const voting = this.nodes.filter((n) => n.votes()).length;
    return voting >= this.quorum ? null : `only ${voting} of ${this.nodes.length} Redis masters can vote for a grant now; Redlock needs ${this.quorum}`;
  }

  /** How long until a majority votes again (0 when it does now; an estimate). */
  grantsResumeInMs(): number {
    if (!this.grantsBlocked()) return 0;
    return this.nodes.map((n) => n.votesInMs()).sort((a, b) => a - b)[this.quorum - 1];
  }

  private keys(name: string) {
    return redlockKeys(this.options.keyPrefix, name);
  }

  /** Runs a script on every node (or `on`), in parallel; a node that fails or times out answers null. */
  private async all(script: RedlockScript, keys: string[], args: (string | number)[], on = this.nodes): Promise<(Reply | null)[]> {
    const run = `redlock_${script}` as const;
    const probe = this.observer.scriptStart(run);
    const replies = await Promise.all(on.map((n) => n.run(script, keys, args).catch(() => null)));
    this.observer.scriptEnd(probe, run, replies.includes(null));
    return replies;
  }

  private async forget(name: string, token: string): Promise<number> {
    const { lease, channel, released } = this.keys(name);
    const replies = await this.all('release', [lease, channel, released], [token]);
    return replies.filter((r) => r === RedlockCode.DONE).length;
  }

  /** One grant attempt: the grant, or how long until the holder's lease ends (a hint for the retry). */
  private async attempt(params: AcquireParams): Promise<{ grant?: Grant; retryInMs: number }> {
    const blocked = this.grantsBlocked();
    if (blocked) throw new LockError('unavailable', `lock "${params.name}": ${blocked}`);
    const { lease, fence } = this.keys(params.name);
    const token = randomBytes(16).toString('base64url');
    const voters = this.nodes.filter((n) => n.votes());
    const start = performance.now();
    const replies = await this.all('acquire', [lease, fence], [token, params.ttlMs, params.owner], voters);
    const votes = voters.filter((_, i) => Array.isArray(replies[i]) && (replies[i] as Reply[])[0] === RedlockCode.DONE);
    let highest = 0n; // the highest token the answering nodes have seen
    let clock = 0n; // the latest Redis TIME (µs) among the votes: tokens never fall below it
    let retryInMs = MAX_BACKOFF_MS;
    for (const reply of replies) {
      if (!Array.isArray(reply)) continue;
      if (BigInt(reply[1]) > highest) highest = BigInt(reply[1]);
      if (reply[0] === RedlockCode.DONE) {
        if (BigInt(reply[2]) > clock) clock = BigInt(reply[2]);
      } else {
        retryInMs = Math.min(retryInMs, Math.max(0, Number(reply[2])));
        if (params.owner && reply[3] === params.owner) {
          await this.forget(params.name, token);
          throw refusal('reentry');
        }
      }
    }
    if (votes.length < this.quorum) {
      // A node that timed out may have voted all the same: take back every vote that may exist.
      if (votes.length > 0 || replies.some((r) => r === null)) await this.forget(params.name, token);
      return { retryInMs };
    }
    const fencingToken = (highest + 1n > clock ? highest + 1n : clock).toString();
    const written = await this.all('fence', [lease, fence], [token, fencingToken, FENCE_RETAIN_MS], votes);
    const now = performance.now();
    const validity = params.ttlMs - (now - start) - drift(params.ttlMs);
    if (written.filter((r) => r === RedlockCode.DONE).length < this.quorum || validity <= 0) {
      await this.forget(params.name, token);
      return { retryInMs: MIN_BACKOFF_MS };
    }
    return { grant: { token, fencingToken, ttlMs: Math.floor(validity), holdCount: 1, leaseStart: now }, retryInMs: 0 };
  }

  async acquire(params: AcquireParams, signal?: AbortSignal): Promise<Grant | null> {
    const probe = this.observer.acquireStart();
    let outcome: AcquireOutcome = 'error';
    try {
      const refused = acquireRefusal(params);
      if (refused) throw refused;
      tooLong(params.ttlMs, this.options.maxTtlMs);
      const grant = await this.grantOrWait(params, signal);
      outcome = grant ? 'granted' : 'not_granted';
      return grant;
    } finally {
      this.observer.acquireEnd(probe, outcome);
    }
  }

  private async grantOrWait(params: AcquireParams, signal?: AbortSignal): Promise<Grant | null> {
    const deadline = performance.now() + params.waitMs;
    const { channel } = this.keys(params.name);
    let backoff = MIN_BACKOFF_MS;
    let subscribed = false;
    let waiting: unknown;
    let outcome: AcquireOutcome = 'error';
    try {
      for (;;) {
        let result: { grant?: Grant; retryInMs: number };
        try {
          result = await this.attempt(params);
        } catch (err) {
          // Too few nodes to vote: a waiting caller waits for them, a try-once caller is told.
          if (!(err instanceof LockError && err.kind === 'unavailable' && params.waitMs > 0)) throw err;
          result = { retryInMs: Math.max(this.grantsResumeInMs(), MIN_BACKOFF_MS) };
        }
        if (result.grant) {
          outcome = signal?.aborted ? 'not_granted' : 'granted';
          if (!signal?.aborted) return result.grant;
          await this.forget(params.name, result.grant.token);
          return null;
        }
        const left = deadline - performance.now();
        if (left <= 0 || signal?.aborted) {
          outcome = 'not_granted';
          return null;
        }
        if (!subscribed) {
          subscribed = true;
          // No queue here: a waiter's wait is its retries until a majority votes for it.
          waiting = this.observer.waitStart();
          await this.listen(channel);
          continue; // a release may have come before the subscription: look once more
        }
        // No queue: wait for a wake-up from any node, or the holder's lease end, or a backoff,
        // then retry after a random part of the backoff so woken waiters do not all collide.
        await this.wakeUpOrAfter(channel, Math.min(left, Math.max(result.retryInMs, backoff)), signal);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * backoff));
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    } finally {
      if (subscribed) {
        this.unlisten(channel);
        this.observer.waitEnd(waiting, outcome);
      }
    }
  }

  private async listen(channel: string): Promise<void> {
    const users = this.listeners.get(channel) ?? 0;
    this.listeners.set(channel, users + 1);
    if (users > 0) return;
    this.wakers.set(channel, new Set());
    // A node that is down or frozen would hold the subscription up: wait for the others only as
    // long as a node may take to answer (a missed wake-up costs one backoff, not correctness).
    const subscribed = Promise.all(this.nodes.map((n) => n.subscribe(channel).catch(() => {})));
    await Promise.race([subscribed, new Promise((resolve) => setTimeout(resolve, this.options.nodeTimeoutMs))]);
  }

  private unlisten(channel: string): void {
    const users = (this.listeners.get(channel) ?? 1) - 1;
    if (users > 0) {
      this.listeners.set(channel, users);
      return;
    }
    this.listeners.delete(channel);
    this.wakers.delete(channel);
    for (const n of this.nodes) n.unsubscribe(channel).catch(() => {});
  }

  private wake(channel: string): void {
    const set = this.wakers.get(channel);
    if (!set) return;
    for (const resolve of [...set]) resolve();
  }

  private wakeUpOrAfter(channel: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const set = this.wakers.get(channel) ?? new Set();
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  async release(name: string, token: string, options: ReleaseOptions = {}): Promise<ReleaseResult> {
    const kept = this.kept.get(token);
    if (options.vanished && !kept?.releaseOnDisconnect) return { released: false, holdCount: 1, holdId: options.holdId ?? '' };
    const released = await this.forget(name, token);
    if (released === 0) {
      this.observer.tokenGone('release');
      throw notHeld(name);
    }
    this.observer.released(false);
    if (kept) this.end(kept, 'released', 'the hold was released with its token');
    return { released: true, holdCount: 0, holdId: kept?.holdId ?? '' };
  }

  /**
   * Renews on every node (ttlMs 0: the grant's own lease length); confirmed only by a majority
   * within the validity, which counts from the start of the round.
   */
  private async renewOnce(name: string, token: string, ttlMs: number): Promise<{ validity: number; at: number } | { gone: 'expired' | 'released' | false }> {
    const start = performance.now();
    const { lease, released } = this.keys(name);
    const replies = await this.all('renew', [lease, released], [token, ttlMs]);
    const renewed = replies.filter((r): r is number => typeof r === 'number' && r > 0);
    const at = performance.now();
    const ttl = Math.min(...renewed);
    const validity = ttl - (at - start) - drift(ttl);
    if (renewed.length >= this.quorum && validity > 0) return { validity, at };
    // A majority answered that the vote is gone: no later renewal can bring it back.
    const gone = replies.filter((r) => r === RedlockCode.NOT_HERE || r === RedlockCode.GIVEN_BACK).length;
    if (gone <= this.nodes.length - this.quorum) return { gone: false };
    return { gone: replies.includes(RedlockCode.GIVEN_BACK) ? 'released' : 'expired' };
  }

  async renew(name: string, token: string, ttlMs: number): Promise<{ ttlMs: number }> {
    tooLong(ttlMs, this.options.maxTtlMs);
    const result = await this.renewOnce(name, token, ttlMs);
    if ('validity' in result) return { ttlMs: Math.floor(result.validity) };
    if (result.gone) this.observer.tokenGone('renew');
    if (result.gone) throw new LockError('not_found', `lock "${name}": the token holds nothing on a majority of the Redis masters (expired or released)`);
    throw new LockError('unavailable', `lock "${name}": the renewal was not confirmed by a majority of the Redis masters in time; count on the lease you had`);
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
        await this.forget(lease.name, lease.token);
        this.observer.released(false);
      },
      abandon: async () => {
        // Vanished: the lock stays closed until the votes run out on their own (the lease the
        // client was told of ends first), unless it asked to be freed on disconnect.
        if (!this.stop(lease)) return;
        if (lease.releaseOnDisconnect) await this.forget(lease.name, lease.token);
        this.observer.released(true);
      },
    };
  }

  private schedule(lease: Kept, inMs: number): void {
    lease.renewAt = performance.now() + inMs;
    this.renewals.set(lease, lease.renewAt);
    this.armRenewals();
  }

  /** One timer for every kept lease (not one per lease), set while any is kept. */
  private armRenewals(): void {
    if (this.renewalTimer || this.kept.size === 0) return;
    this.renewalTimer = setTimeout(() => {
      this.renewalTimer = undefined;
      this.renewDue();
      this.armRenewals();
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
    const result = await this.renewOnce(lease.name, lease.token, ttl);
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

  /** What the nodes say; a holder is one that a majority agrees on. */
  private async survey(name: string): Promise<{ holder?: { owner: string; fence: string; ttlMs: number }; latest: string }> {
    const { lease, fence } = this.keys(name);
    const replies = (await this.all('inspect', [lease, fence], [])).filter(Array.isArray) as (string | number)[][];
    let latest = 0n;
    const byHolder = new Map<string, (string | number)[][]>();
    for (const reply of replies) {
      if (BigInt(reply[3]) > latest) latest = BigInt(reply[3]);
      if (Number(reply[2]) > 0 && reply[4]) byHolder.set(String(reply[4]), [...(byHolder.get(String(reply[4])) ?? []), reply]);
    }
    for (const agreeing of byHolder.values()) {
      if (agreeing.length < this.quorum) continue;
      const ttlMs = Math.min(...agreeing.map((r) => Number(r[2])));
      return { holder: { owner: String(agreeing[0][0]), fence: String(agreeing[0][1]), ttlMs }, latest: latest.toString() };
    }
    return { latest: latest.toString() };
  }

  async inspect(name: string): Promise<LockInfo> {
    const { holder, latest } = await this.survey(name);
    return {
      name,
      holders: holder ? [{ owner: holder.owner, fencingToken: holder.fence, ttlMs: holder.ttlMs, holdCount: 1, mode: Mode.EXCLUSIVE, value: '' }] : [],
      waiters: this.wakers.get(this.keys(name).channel)?.size ?? 0,
      fencingToken: latest,
      limit: 1,
      grantsResumeInMs: this.grantsResumeInMs(),
    };
  }

  /** Watch and published values need one Redis's pub/sub and state: not offered over independent masters. */
  async setValue(): Promise<never> {
    throw refusal('setValue');
  }

  watch(): never {
    throw refusal('watch');
  }

  async checkFencingToken(name: string, fencingToken: string): Promise<FenceCheck> {
    const { holder, latest } = await this.survey(name);
    const live = holder?.fence === fencingToken;
    return { live, ttlMs: live ? holder!.ttlMs : 0, mode: live ? Mode.EXCLUSIVE : 0, latestFencingToken: latest };
  }

  stats(): EngineStats {
    let waiters = 0;
    for (const set of this.wakers.values()) waiters += set.size;
    return {
      waiters,
      lines: this.wakers.size,
      subscriptions: this.wakers.size,
      lineTimers: 0,
      claimsInFlight: 0,
      keptLeases: this.kept.size,
      namedHolds: this.kept.size,
      timerArmed: this.renewalTimer !== undefined,
    };
  }

  async close(): Promise<void> {
    for (const lease of [...this.kept.values()]) this.end(lease, 'server_shutdown', 'the server is shutting down');
    for (const channel of this.wakers.keys()) this.wake(channel);
    clearTimeout(this.renewalTimer);
    this.closeNodes();
  }
}
