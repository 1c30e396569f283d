// What the transport asks of a lock backend: LockEngine provides it, on whichever store (one
// Redis, Sentinel or Cluster, or Redlock's independent masters).
import type { EngineStats } from './engine';
import type { AcquireParams, FenceCheck, Grant, LockInfo, LockScan, ReleaseOptions, ReleaseResult } from './types';
import type { WatchListener } from './watch-room';
import type { KeepRequest, KeptLease, LeaseEvents } from './types';
import type { GroupEvents, GroupOptions, LeaseGroup } from './lease-group';

export interface LockBackend {
  acquire(params: AcquireParams, signal?: AbortSignal): Promise<Grant | null>;
  release(name: string, token: string, options?: ReleaseOptions): Promise<ReleaseResult>;
  /** fencingToken: the renewed grant's, where the store's reply carries it (one Redis; absent in Redlock mode). */
  renew(name: string, token: string, ttlMs: number): Promise<{ ttlMs: number; fencingToken?: string }>;
  inspect(name: string): Promise<LockInfo>;
  /** One SCAN step through the locks with holders or waiters (absent: this backend cannot list its locks). */
  scanLocks?(cursor: string, count: number, namePrefix?: string): Promise<LockScan>;
  checkFencingToken(name: string, fencingToken: string): Promise<FenceCheck>;
  /** Replaces the value a live grant publishes to watchers. */
  setValue(name: string, token: string, value: string): Promise<{ fencingToken: string }>;
  /** Follows one lock's changes; returns the way to stop. Throws a LockError when the backend cannot. */
  watch(name: string, listener: WatchListener): () => void;
  keep(request: KeepRequest, events: LeaseEvents, leaseStart: number, grantedMs?: number): KeptLease;
  /** A lease group: the holds of one Hold, HoldSet or Session, renewed, reported and ended together. */
  group(events: GroupEvents, options: GroupOptions): LeaseGroup;
  stats(): EngineStats;
  close(): Promise<void>;
}
