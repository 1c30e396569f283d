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
//
// Here: the grant, renewal and read rounds over the masters. Waiting between tries is in
// wake-ups.ts, keeping a Hold's lease in lease-keeper.ts, what this mode refuses in refusals.ts.
import { randomBytes } from 'node:crypto';
import type { LockBackend } from '../engine/backend';
import type { EngineStats } from '../engine/engine';
import { ttlCapProblem } from '../config/bounds';
import { LockError, RedlockCode } from '../engine/errors';
import { redlockKeys } from '../engine/keys';
import { NO_OBSERVER, type AcquireOutcome, type EngineObserver } from '../engine/observer';
import { notHeld } from '../engine/replies';
import { Mode, type AcquireParams, type FenceCheck, type Grant, type LockInfo, type ReleaseOptions, type ReleaseResult } from '../engine/types';
import type { KeepRequest, KeptLease, LeaseEvents } from '../engine/types';
import { connectNodes, type RedlockNode, type RedlockScript, type Reply } from './nodes';
import { LeaseKeeper, type RenewalRound } from './lease-keeper';
import { acquireRefusal, refusal } from './refusals';
import { WakeUps } from './wake-ups';

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

function drift(ttlMs: number): number {
  return Math.ceil(ttlMs * CLOCK_DRIFT) + 2;
}

function tooLong(ttlMs: number, maxTtlMs: number): void {
  const problem = ttlCapProblem(ttlMs, maxTtlMs);
  if (problem) throw new LockError('invalid', problem);
}

export class RedlockEngine implements LockBackend {
  private readonly nodes: RedlockNode[];
  private readonly closeNodes: () => void;
  readonly quorum: number;
  private readonly wakeUps: WakeUps;
  private readonly leases: LeaseKeeper;
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
          for (const engine of this.siblings) engine.wakeUps.wake(channel);
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
    this.wakeUps = new WakeUps(this.nodes, options.nodeTimeoutMs);
    this.leases = new LeaseKeeper(
      { renew: (name, token, ttlMs) => this.renewOnce(name, token, ttlMs), forget: (name, token) => this.forget(name, token) },
      this.observer,
    );
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
          await this.wakeUps.listen(channel);
          continue; // a release may have come before the subscription: look once more
        }
        // No queue: wait for a wake-up from any node, or the holder's lease end, or a backoff,
        // then retry after a random part of the backoff so woken waiters do not all collide.
        await this.wakeUps.wakeUpOrAfter(channel, Math.min(left, Math.max(result.retryInMs, backoff)), signal);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * backoff));
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    } finally {
      if (subscribed) {
        this.wakeUps.unlisten(channel);
        this.observer.waitEnd(waiting, outcome);
      }
    }
  }

  async release(name: string, token: string, options: ReleaseOptions = {}): Promise<ReleaseResult> {
    if (options.vanished && !this.leases.releasesOnDisconnect(token)) return { released: false, holdCount: 1, holdId: options.holdId ?? '' };
    const released = await this.forget(name, token);
    if (released === 0) {
      this.observer.tokenGone('release');
      throw notHeld(name);
    }
    this.observer.released(false);
    return { released: true, holdCount: 0, holdId: this.leases.released(token) };
  }

  /**
   * Renews on every node (ttlMs 0: the grant's own lease length); confirmed only by a majority
   * within the validity, which counts from the start of the round.
   */
  private async renewOnce(name: string, token: string, ttlMs: number): Promise<RenewalRound> {
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
      waiters: this.wakeUps.sleepingOn(this.keys(name).channel),
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

  /** Keeps a Hold's lease (lease-keeper.ts). */
  keep(request: KeepRequest, events: LeaseEvents, leaseStart: number, grantedMs = request.ttlMs): KeptLease {
    return this.leases.keep(request, events, leaseStart, grantedMs);
  }

  stats(): EngineStats {
    const { waiters, channels } = this.wakeUps.stats();
    return {
      waiters,
      lines: channels,
      subscriptions: channels,
      lineTimers: 0,
      claimsInFlight: 0,
      keptLeases: this.leases.size,
      namedHolds: this.leases.size,
      timerArmed: this.leases.timerArmed,
    };
  }

  async close(): Promise<void> {
    this.leases.endAll('server_shutdown', 'the server is shutting down');
    this.wakeUps.wakeAll();
    this.closeNodes();
  }
}
