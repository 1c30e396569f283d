// Redlock mode's storage: a lock is granted by a majority of N independent Redis masters
// (majority.ts), behind the one lock engine. This store answers the engine's requests with the
// same named answers as one Redis (src/engine/store.ts), so the engine's waiting, lease keeping,
// fencing and events are the same as on one Redis; what this mode cannot do it refuses
// (refusals.ts), and it keeps no queue: the engine's waiters retry (src/engine/retry-wait.ts).
// It owns the masters' connections and each one's restart quarantine (nodes.ts) and the lock
// channels' subscription on every master (fan-out.ts).
import { LockError } from '../engine/errors';
import { redlockKeys, type RedlockKeys } from '../engine/keys';
import type {
  AcquireAnswer,
  AcquireRequest,
  ClaimAnswer,
  LockRecord,
  LockRef,
  LockStore,
  ReleaseAnswer,
  ReleaseRequest,
  RenewAnswer,
  RenewRequest,
  StoreOp,
} from '../engine/store';
import { Mode, type AcquireParams, type FenceCheck } from '../engine/types';
import { FanOutSubscriber } from './fan-out';
import { Majority } from './majority';
import { connectNodes } from './nodes';
import { refusal, refusalOf } from './refusals';

export interface RedlockStoreOptions {
  urls: string[];
  /** Per-node answer timeout. */
  nodeTimeoutMs: number;
  /**
   * How long a restarted (or unvouched) master sits out: every lease it may have granted
   * (--max-ttl-ms + --quarantine-margin-ms). 0 trusts restarts: the masters persist every write
   * before answering (appendfsync always), so a restarted one remembers its votes. Without that,
   * a restart without persistence could hand a held lock to a second client.
   */
  quarantineMs: number;
  epochKey: string;
  onQuarantine?: (url: string, why: string, ms: number) => void;
  onChange?: () => void;
}

export class RedlockStore implements LockStore {
  readonly queues = false;
  readonly confirmsWrites = false;
  readonly subscriber: FanOutSubscriber;
  private readonly majority: Majority;
  private readonly closeNodes: () => void;

  constructor(options: RedlockStoreOptions) {
    this.subscriber = new FanOutSubscriber(options.nodeTimeoutMs);
    const connected = connectNodes(options.urls, {
      timeoutMs: options.nodeTimeoutMs,
      epochKey: options.epochKey,
      quarantineMs: options.quarantineMs,
      onMessage: (channel, message) => this.subscriber.heard(channel, message),
      onQuarantine: options.onQuarantine,
      onChange: options.onChange,
    });
    this.subscriber.attach(connected.nodes);
    this.majority = new Majority(connected.nodes);
    this.closeNodes = connected.close;
  }

  /** How many masters a grant needs. */
  get quorum(): number {
    return this.majority.quorum;
  }

  refusal(op: StoreOp, params?: AcquireParams): LockError | null {
    return refusalOf(op, params);
  }

  /** A majority vote: granted with hold count 1, or not granted with a retry hint; never queued. */
  async acquire(request: AcquireRequest): Promise<AcquireAnswer> {
    const { token, owner, ttlMs, holdId } = request;
    const result = await this.majority.vote(keysOf(request.lock), { token, owner, ttlMs, holdId });
    if ('retryInMs' in result) return { outcome: 'not_granted', nextExpiryMs: result.retryInMs };
    return { outcome: 'granted', grant: { token, fencingToken: result.fencingToken, ttlMs: result.validMs, holdCount: 1 }, confirmed: true };
  }

  /**
   * Freed once any master took it back; not held when none did. A vanished holder (not asking to
   * be freed on disconnect) may still count on its lease: its votes are left to run out, and
   * nothing is sent.
   */
  async release(request: ReleaseRequest): Promise<ReleaseAnswer> {
    const { holdId } = request;
    if (request.vanished) return { held: true, freed: false, holdCount: 1, holdId, handedOff: [], confirmed: true };
    const { released, holdId: voted } = await this.majority.forget(keysOf(request.lock), request.token);
    if (released === 0) return { held: false };
    return { held: true, freed: true, holdCount: 0, holdId: voted || holdId, handedOff: [], confirmed: true };
  }

  /** Renewed for the validity a majority confirmed; not renewed once a majority says the vote is gone; else UNAVAILABLE. */
  async renew(request: RenewRequest): Promise<RenewAnswer> {
    const result = await this.majority.renew(keysOf(request.lock), request.token, request.ttlMs, request.withFence);
    if ('validMs' in result) return { renewed: true, leftMs: result.validMs, confirmed: true, fencingToken: result.fencingToken };
    if (result.gone === 'released') return { renewed: false, why: 'hold_released' };
    if (result.gone === 'expired') return { renewed: false, why: 'expired' };
    throw new LockError('unavailable', 'the renewal was not confirmed by a majority of the Redis masters in time; count on the lease you had');
  }

  /** One majority round per renewal, all at once (the watchdog's renewals of one tick). */
  renewMany(requests: RenewRequest[]): Promise<(RenewAnswer | Error)[]> {
    return Promise.all(requests.map((request) => this.renew(request).catch((err: Error) => err)));
  }

  /** Never called: this store has no queue (queues is false). */
  claim(): Promise<ClaimAnswer> {
    return Promise.reject(new Error('Redlock mode keeps no queue to claim from'));
  }

  dequeue(): Promise<void> {
    return Promise.reject(new Error('Redlock mode keeps no queue to leave'));
  }

  /** The latest fencing token, limit 1, no waiters (no queue), and the holder a majority agrees on. */
  async inspect(lock: LockRef): Promise<LockRecord> {
    const { holder, latest } = await this.majority.survey(keysOf(lock));
    const holders = holder ? [{ owner: holder.owner, fencingToken: holder.fence, ttlMs: holder.ttlMs, holdCount: 1, mode: Mode.EXCLUSIVE, value: '' }] : [];
    return { fencingToken: latest, limit: 1, waiters: 0, holders };
  }

  /** Live when the holder a majority agrees on has this fencing token. */
  async checkFencingToken(request: { lock: LockRef; fencingToken: string }): Promise<FenceCheck> {
    const { holder, latest } = await this.majority.survey(keysOf(request.lock));
    if (holder?.fence !== request.fencingToken) return { live: false, ttlMs: 0, mode: 0, latestFencingToken: latest };
    return { live: true, ttlMs: holder.ttlMs, mode: Mode.EXCLUSIVE, latestFencingToken: latest };
  }

  /** Refused before acting (refusals.ts): no record ties a request id to its grant. */
  tieRequestId(): Promise<boolean> {
    return Promise.reject(refusal('requestId'));
  }

  /** Refused before acting (refusals.ts): no one Redis to publish a holder's value from. */
  setValue(): Promise<{ fencingToken: string } | null> {
    return Promise.reject(refusal('setValue'));
  }

  /** The wake-up channel every master publishes a release on (fan-out.ts subscribes it on each). */
  channelOf(lock: LockRef): string {
    return keysOf(lock).channel;
  }

  /** Every lock is voted on by every master: renewals need no split per node. */
  nodeOf(): string {
    return '';
  }

  grantsBlocked(): string | null {
    return this.majority.grantsBlocked();
  }

  grantsResumeInMs(): number {
    return this.majority.grantsResumeInMs();
  }

  /** A master's restart sits it out (nodes.ts); no failover moves a grant. */
  lastFailoverAt(): number {
    return -Infinity;
  }

  verifying(): boolean {
    return false;
  }

  checksMaster(): boolean {
    return false;
  }

  close(): void {
    this.closeNodes();
  }
}

function keysOf(lock: LockRef): RedlockKeys {
  return redlockKeys(lock.prefix, lock.name);
}
