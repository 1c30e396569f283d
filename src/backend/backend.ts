// What the server needs from the place lock state lives, whichever it is: one Redis (given or
// embedded), Sentinel or Cluster (redis.ts), or Redlock's independent masters (redlock.ts).
import type { LockBackend } from '../engine/backend';

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
  /** Why new grants are held back (a failover quarantine), or null. */
  grantsBlocked?(): string | null;
  /** Stops the engine's connections (and an embedded redis-server). The engine is closed first by the server. */
  close(): Promise<void>;
}
