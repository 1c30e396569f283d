// What the lock engine asks of the Redis topology beyond running scripts, and nothing about
// which topology it is: whether a write must be confirmed by replicas before it is reported
// (WAIT on the same connection), and whether new grants may be made now (not while a newly
// promoted master is quarantined).
import type { ChainableCommander, Cluster, Redis } from 'ioredis';
import { FailoverWatch } from './failover-watch';
import { ReplicaAcks, type SyncReplicas } from './replica-acks';

export interface WriteGuard {
  /**
   * The connection that writes needing confirmation go on (absent: the engine's own). WAIT
   * blocks its connection while it waits; on a connection of their own, releases and reads
   * never queue behind it.
   */
  readonly connection?: Redis | Cluster;
  /**
   * Appends to `pipeline`, after the writes it must confirm, the command that waits for them to
   * reach replicas; returns the check of that command's reply. Absent when no confirmation is
   * asked (the write counts once the master has it).
   */
  confirmAfter?(pipeline: ChainableCommander): (reply: unknown) => boolean;
  /** Why no new grant (or hand-off) may be made right now, or null when it may. */
  grantsBlocked(): string | null;
  /** How long until grants may be made again (0 when they may now; an estimate when unknown). */
  grantsResumeInMs(): number;
  /** performance.now() of the latest master change this server saw (-Infinity: none). */
  readonly lastFailoverAt: number;
  /** The server reconnected and does not know yet whether the master changed (lastFailoverAt may still move). */
  readonly verifying: boolean;
  close(): void;
}

export interface GuardOptions {
  /** Replicas that must acknowledge every grant, hand-off claim and renewal; 0 or absent: none. */
  syncReplicas?: SyncReplicas;
  /** How long WAIT waits for them (under the 1 s command timeout). */
  syncTimeoutMs?: number;
  /** Quarantine a master this server has not seen grants made under; absent: no quarantine. */
  quarantine?: {
    /** The longest lease any server could have granted plus a margin. */
    ms: number;
    /** Where the epoch record lives. */
    epochKey: string;
    onQuarantine?: (why: string, ms: number) => void;
    onError?: (err: unknown) => void;
  };
  /** Called when grantsBlocked() may have changed (for health). */
  onChange?: () => void;
}

/** The guard for a topology, or undefined when nothing is asked beyond the master's word. */
export function createWriteGuard(redis: Redis | Cluster, options: GuardOptions): WriteGuard | undefined {
  const acks = options.syncReplicas ? new ReplicaAcks(redis, options.syncReplicas, options.syncTimeoutMs ?? 500) : undefined;
  if (!acks && !options.quarantine) return undefined;
  const connection = acks ? redis.duplicate() : undefined;
  connection?.on('error', () => {}); // failures surface through the calls made on it
  const grantConnection = connection ?? redis;
  const watch = options.quarantine
    ? new FailoverWatch({
        redis: grantConnection,
        watched: connection ? [connection, redis] : [redis],
        epochKey: options.quarantine.epochKey,
        quarantineMs: options.quarantine.ms,
        onChange: options.onChange,
        onError: options.quarantine.onError,
        onQuarantine: options.quarantine.onQuarantine,
      })
    : undefined;
  return {
    connection,
    confirmAfter: acks && ((pipeline) => acks.confirmAfter(pipeline)),
    grantsBlocked: () => watch?.blocked() ?? null,
    grantsResumeInMs: () => watch?.resumeInMs() ?? 0,
    get lastFailoverAt() {
      return watch?.lastFailoverAt ?? -Infinity;
    },
    get verifying() {
      return watch ? !watch.isVerified : false;
    },
    close: () => {
      acks?.close();
      watch?.close();
      connection?.disconnect();
    },
  };
}
