// What the server needs from the place lock state lives, whichever it is: one Redis (given or
// embedded), Sentinel or Cluster (redis.ts), or Redlock's independent masters (redlock.ts).
import type { Logger } from 'pino';
import type { LockBackend } from '../engine/backend';
import type { RedisSecurity } from '../redis/connect';
import type { SyncReplicas } from '../redis/replica-acks';

export interface Backend {
  engine: LockBackend;
  /** An engine for a namespace, over the same connections. */
  engineForNamespace(namespace: string): LockBackend;
  /** Where the state lives, for logs (passwords masked). */
  description: string;
  /** Whether new grants can be made now (health SERVING). */
  serving(): boolean;
  /** Whether Redis answers (for metrics and /readyz; absent: serving() says it). */
  redisUp?(): boolean;
  /** Redis's clock (TIME) in Unix ms, for the lease ends signed fences state; absent: no one Redis clock (Redlock). */
  redisTimeMs?(): Promise<number>;
  /** Why new grants are held back (a failover quarantine), or null. */
  grantsBlocked?(): string | null;
  /** Stops the engine's connections (and an embedded redis-server). The engine is closed first by the server. */
  close(): Promise<void>;
}

/** What a backend is started from: the server's settings for where lock state lives. */
export interface BackendConfig {
  /** Omit (with redisClusterNodes) to start a private redis-server child. */
  redisUrl?: string;
  /** Seed nodes (host:port) of a Redis Cluster, instead of redisUrl. */
  redisClusterNodes?: string[];
  /** Sentinels (host:port) that name the master `redisMaster`, instead of redisUrl. */
  redisSentinels?: string[];
  redisMaster?: string;
  /** Credentials and TLS for a given Redis (not the embedded one). */
  redisSecurity?: RedisSecurity;
  /** Replicas that must acknowledge every grant and renewal (WAIT); 0 or absent: none. */
  syncReplicas?: SyncReplicas;
  syncTimeoutMs?: number;
  /** A wait this long walks who-waits-for-whom and ends one wait of a cycle (docs/deadlocks.md); 0: off; absent: 1000. */
  deadlockTimeoutMs?: number;
  /** Start even when the master's min-replicas-to-write is 0 (only with unsafeNoFailoverSafety). */
  allowMinReplicasZero?: boolean;
  /**
   * Give up the failover guarantee (src/config/safety.ts): no quarantine of a master this server
   * cannot vouch for. Absent: quarantined for maxTtlMs + quarantineMarginMs.
   */
  unsafeNoFailoverSafety?: boolean;
  /** The longest lease this server grants or renews; default SAFE_MAX_TTL_MS. */
  maxTtlMs?: number;
  quarantineMarginMs?: number;
  dataDir: string;
  keyPrefix: string;
  /** Redis URLs of independent masters: Redlock mode instead of one Redis (src/redlock). */
  redlock?: string[];
  /** How long one Redlock node may take to answer. */
  redlockNodeTimeoutMs?: number;
  /** Redlock's masters persist every write (appendfsync always): a restarted one votes again at once. */
  redlockTrustRestarts?: boolean;
  logger: Logger;
}
