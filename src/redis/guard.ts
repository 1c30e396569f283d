// What the lock engine asks of the Redis topology beyond running scripts, and nothing about
// which topology it is: whether a write must be confirmed by replicas before it is reported
// (WAIT on the same connection), and whether new grants may be made now (not while a newly
// promoted master is quarantined).
import type { ChainableCommander, Cluster, Redis } from 'ioredis';
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
  close(): void;
}

export interface GuardOptions {
  /** Replicas that must acknowledge every grant, hand-off claim and renewal; 0 or absent: none. */
  syncReplicas?: SyncReplicas;
  /** How long WAIT waits for them (under the 1 s command timeout). */
  syncTimeoutMs?: number;
}

/** The guard for a topology, or undefined when nothing is asked beyond the master's word. */
export function createWriteGuard(redis: Redis | Cluster, options: GuardOptions): WriteGuard | undefined {
  const acks = options.syncReplicas ? new ReplicaAcks(redis, options.syncReplicas, options.syncTimeoutMs ?? 500) : undefined;
  if (!acks) return undefined;
  const connection = redis.duplicate();
  connection.on('error', () => {}); // failures surface through the calls made on it
  return {
    connection,
    confirmAfter: (pipeline) => acks.confirmAfter(pipeline),
    grantsBlocked: () => null,
    grantsResumeInMs: () => 0,
    lastFailoverAt: -Infinity,
    close: () => {
      acks.close();
      connection.disconnect();
    },
  };
}
