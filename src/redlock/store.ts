// Redlock mode's storage: a lock is granted by a majority of N independent Redis masters
// (majority.ts), behind the one lock engine. This store answers the engine's operations by name
// with replies in the shapes the single-Redis scripts return (lua/acquire-4.lua, release-4,
// renew-3, inspect-3, check-fencing-token-3), so the engine's waiting, lease keeping, fencing and
// events are the same as on one Redis; what this mode cannot do it refuses (refusals.ts), and it
// keeps no queue: the engine's waiters retry (src/engine/retry-wait.ts).
// It owns the masters' connections and each one's restart quarantine (nodes.ts) and the lock
// channels' subscription on every master (fan-out.ts).
import { LockError, NotRenewed, ReleaseCode, ScriptCode, ScriptFlag } from '../engine/errors';
import { redlockKeysOf } from '../engine/keys';
import type { ScriptName } from '../engine/scripts';
import type { BatchResult, LockStore, Reply, ScriptCall, StoreOp } from '../engine/store';
import { Mode, type AcquireParams } from '../engine/types';
import { FanOutSubscriber } from './fan-out';
import { Majority } from './majority';
import { connectNodes } from './nodes';
import { refusalOf } from './refusals';

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

/** Where the engine's calls carry what a vote needs (the ARGV order of lua/acquire-4.lua, release-4, renew-3). */
const ACQUIRE_ARG = { token: 0, owner: 1, ttlMs: 2, holdId: 8 } as const;
const RELEASE_ARG = { token: 0, holdId: 1, vanished: 2 } as const;
const RENEW_ARG = { token: 0, ttlMs: 1 } as const;
const FENCE_ARG = { fencingToken: 0 } as const;

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

  run(script: ScriptName, call: ScriptCall): Promise<Reply> {
    switch (script) {
      case 'acquire':
        return this.acquire(call);
      case 'release':
        return this.release(call);
      case 'renew':
        return this.renew(call);
      case 'inspect':
        return this.inspect(call);
      case 'checkFencingToken':
        return this.checkFencingToken(call);
      default:
        // The operations this store refuses (refusals.ts) are the only ones that would need these.
        return Promise.reject(new Error(`Redlock mode has no "${script}" operation`));
    }
  }

  async runConfirmed(script: ScriptName, call: ScriptCall): Promise<{ reply: Reply; confirmed: boolean }> {
    return { reply: await this.run(script, call), confirmed: true };
  }

  /** One majority round per call, all at once (the watchdog's renewals of one tick). */
  runBatch(script: ScriptName, calls: ScriptCall[]): Promise<BatchResult[]> {
    return Promise.all(
      calls.map((call) =>
        this.run(script, call).then(
          (reply): BatchResult => [null, reply],
          (err: Error): BatchResult => [err, null],
        ),
      ),
    );
  }

  /** {GRANTED, token, fencing token, validity, hold count 1}, or {NOT_GRANTED, retry hint}; never queued. */
  private async acquire({ keys, args }: ScriptCall): Promise<Reply> {
    const token = String(args[ACQUIRE_ARG.token]);
    const result = await this.majority.vote(redlockKeysOf(keys[0]), {
      token,
      owner: String(args[ACQUIRE_ARG.owner]),
      ttlMs: Number(args[ACQUIRE_ARG.ttlMs]),
      holdId: String(args[ACQUIRE_ARG.holdId] ?? ''),
    });
    if ('retryInMs' in result) return [ScriptCode.NOT_GRANTED, result.retryInMs];
    return [ScriptCode.GRANTED, token, result.fencingToken, result.validMs, 1];
  }

  /**
   * {FREED, 0, hold id} once any master took it back; {NOT_FOUND} when none held it. A vanished
   * holder (not asking to be freed on disconnect) may still count on its lease: its votes are left
   * to run out, and nothing is sent.
   */
  private async release({ keys, args }: ScriptCall): Promise<Reply> {
    const holdId = String(args[RELEASE_ARG.holdId] ?? '');
    if (Number(args[RELEASE_ARG.vanished]) === 1) return [ReleaseCode.STILL_HELD, 1, holdId];
    const { released, holdId: voted } = await this.majority.forget(redlockKeysOf(keys[0]), String(args[RELEASE_ARG.token]));
    if (released === 0) return [ScriptCode.NOT_FOUND];
    return [ReleaseCode.FREED, 0, voted || holdId];
  }

  /** {1, validity}, {NOT_FOUND, why} once a majority says the vote is gone; else UNAVAILABLE. */
  private async renew({ keys, args }: ScriptCall): Promise<Reply> {
    const result = await this.majority.renew(redlockKeysOf(keys[0]), String(args[RENEW_ARG.token]), Number(args[RENEW_ARG.ttlMs]));
    if ('validMs' in result) return [1, result.validMs];
    if (result.gone === 'released') return [ScriptCode.NOT_FOUND, NotRenewed.HOLD_RELEASED];
    if (result.gone === 'expired') return [ScriptCode.NOT_FOUND, NotRenewed.EXPIRED];
    throw new LockError('unavailable', 'the renewal was not confirmed by a majority of the Redis masters in time; count on the lease you had');
  }

  /** {latest fencing token, limit 1, waiters 0 (no queue), the holder a majority agrees on}. */
  private async inspect({ keys }: ScriptCall): Promise<Reply> {
    const { holder, latest } = await this.majority.survey(redlockKeysOf(keys[0]));
    const holders = holder ? [[holder.owner, holder.fence, holder.ttlMs, 1, Mode.EXCLUSIVE, '']] : [];
    return [latest, 1, 0, ...holders];
  }

  /** {live, lease left, mode, latest fencing token}, from what a majority says. */
  private async checkFencingToken({ keys, args }: ScriptCall): Promise<Reply> {
    const { holder, latest } = await this.majority.survey(redlockKeysOf(keys[0]));
    const live = holder?.fence === String(args[FENCE_ARG.fencingToken]);
    return live ? [ScriptFlag.YES, holder!.ttlMs, Mode.EXCLUSIVE, latest] : [ScriptFlag.NO, 0, 0, latest];
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
