// What the lock engine asks of the Redis topology beyond running scripts, and nothing about
// which topology it is: whether a write must be confirmed by replicas before it is reported
// (WAIT on the same connection), and whether new grants may be made now (not while a newly
// promoted master is quarantined).
import calculateSlot from 'cluster-key-slot';
import { Cluster, type ChainableCommander, type Redis } from 'ioredis';
import { ClusterFailoverWatch } from './cluster-failover-watch';
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
  /**
   * Why no new grant (or hand-off) may be made right now on the lock that `key` belongs to (on
   * any lock when absent: for health), or null when it may. On a Cluster each shard has its own
   * quarantine.
   */
  grantsBlocked(key?: string): string | null;
  /** How long until grants may be made again (0 when they may now; an estimate when unknown). */
  grantsResumeInMs(key?: string): number;
  /** performance.now() of the latest master change this server saw for `key`'s master (-Infinity: none). */
  lastFailoverAt(key: string): number;
  /** The server reconnected and does not know yet whether `key`'s master changed (lastFailoverAt may still move). */
  verifying(key: string): boolean;
  /** Every master grants go to has been identified at least once (false while none has, or none is known yet). */
  identified(): boolean;
  /**
   * The run_id of the master a grant on `key` must be made on, checked by the script itself
   * ('' for no check). Only on a Cluster, where the client may follow MOVED to an unchecked node.
   */
  expectedMaster(key: string): string;
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
    /**
     * The first master this server meets holds every grant ever made on it (the embedded Redis
     * on a new data dir, or one that fsyncs every write): no quarantine for it.
     */
    startsComplete?: boolean;
    /** Where a Cluster shard's record lives, given a hash tag in one of its slots. */
    shardEpochKey: (tag: string) => string;
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
  const quarantine = options.quarantine;
  if (quarantine && grantConnection instanceof Cluster) {
    const shards = new ClusterFailoverWatch({
      cluster: grantConnection,
      epochKeyIn: quarantine.shardEpochKey,
      quarantineMs: quarantine.ms,
      onChange: options.onChange,
      onError: quarantine.onError,
      onQuarantine: quarantine.onQuarantine && ((why, ms, node) => quarantine.onQuarantine!(`${why} (shard master ${node})`, ms)),
    });
    const slot = (key?: string) => (key === undefined ? undefined : calculateSlot(key));
    return {
      connection,
      confirmAfter: acks && ((pipeline) => acks.confirmAfter(pipeline)),
      grantsBlocked: (key) => shards.blocked(slot(key)),
      grantsResumeInMs: (key) => shards.resumeInMs(slot(key)),
      lastFailoverAt: (key) => shards.lastFailoverAt(calculateSlot(key)),
      verifying: (key) => shards.verifying(calculateSlot(key)),
      identified: () => shards.identified(),
      expectedMaster: (key) => shards.expectedMaster(calculateSlot(key)),
      close: () => {
        acks?.close();
        shards.close();
        connection?.disconnect();
      },
    };
  }
  const watch = quarantine
    ? new FailoverWatch({
        redis: grantConnection,
        watched: connection ? [connection, redis] : [redis],
        epochKey: quarantine.epochKey,
        quarantineMs: quarantine.ms,
        startsComplete: quarantine.startsComplete,
        onChange: options.onChange,
        onError: quarantine.onError,
        onQuarantine: quarantine.onQuarantine,
      })
    : undefined;
  return {
    connection,
    confirmAfter: acks && ((pipeline) => acks.confirmAfter(pipeline)),
    grantsBlocked: () => watch?.blocked() ?? null,
    grantsResumeInMs: () => watch?.resumeInMs() ?? 0,
    lastFailoverAt: () => watch?.lastFailoverAt ?? -Infinity,
    verifying: () => (watch ? !watch.isVerified : false),
    identified: () => (watch ? watch.isVerified : true),
    expectedMaster: () => '',
    close: () => {
      acks?.close();
      watch?.close();
      connection?.disconnect();
    },
  };
}
