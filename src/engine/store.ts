// Where lock state lives, as the engine sees it: somewhere that runs the lock scripts by name.
// Each topology (one Redis or Sentinel, a Cluster; src/redis/store.ts) is one implementation and
// owns its connections, the loading and reloading of the function library, pipelines per node,
// the replicas' acknowledgement (WAIT), slot refreshes and the failover quarantine. The engine
// never learns which topology it is on. A store that cannot do everything (Redlock's independent
// masters, src/redlock/store.ts) says so through its capabilities (queues, refusal, scan), and
// the engine asks before acting.
import type { LockError } from './errors';
import type { ScriptName } from './scripts';
import type { AcquireParams } from './types';

export type Reply = (string | number | Reply)[];

/** One script call: its keys (one hash tag) and arguments. */
export interface ScriptCall {
  keys: string[];
  args: (string | number)[];
}

/** The outcome of one call of a batch: an error (not yet turned into a LockError) or its reply. */
export type BatchResult = [Error | null, unknown];

/** What lock channels need of a subscriber connection (sharded pub/sub). */
export interface Subscriber {
  on(event: 'smessage', listener: (channel: string, message: string) => void): unknown;
  ssubscribe(channel: string): Promise<unknown>;
  sunsubscribe(channel: string): Promise<unknown>;
}

/** What the engine asks a store whether it may do (LockStore.refusal). */
export type StoreOp = 'acquire' | 'setValue' | 'watch';

export interface LockStore {
  /**
   * Whether a waiter can queue here (acquire-4 answers QUEUED and releases hand the lock over);
   * false: acquire only grants or refuses, and the engine's waiters retry (retry-wait.ts).
   */
  readonly queues: boolean;
  /** Why this store refuses `op` (with these acquire params), or null; absent: it refuses nothing. */
  refusal?(op: StoreOp, params?: AcquireParams): LockError | null;
  /** Runs one script; Redis trouble becomes LockError('unavailable'). */
  run(script: ScriptName, call: ScriptCall): Promise<Reply>;
  /**
   * Runs a script that grants or extends a lease, followed, when the topology asks for replica
   * acknowledgement, by its check in the same round trip; `confirmed` says whether it passed
   * (always true when none is asked).
   */
  runConfirmed(script: ScriptName, call: ScriptCall): Promise<{ reply: Reply; confirmed: boolean }>;
  /**
   * Runs calls that all go to one node (see nodeOf) in one pipelined round trip, confirmed
   * together; a call the replicas did not confirm fails. Never throws: each call has its result.
   */
  runBatch(script: ScriptName, calls: ScriptCall[]): Promise<BatchResult[]>;
  /** Names the node `key` lives on now, so a batch can be split per node ('' for one node). */
  nodeOf(key: string): string;
  /**
   * How many leases one renewal call may carry: above 1 the watchdog renews with 'renewBatch'
   * (lua/renew-batch-3.lua, many leases per call); absent or 1, with one 'renew' per lease.
   */
  readonly renewalsPerCall?: number;
  /**
   * Which leases one 'renewBatch' call may renew together: on a Redis Cluster the slot of `key`
   * (a script touches one slot there), elsewhere 0 for all. Fixed for a key, so asked once per lease.
   */
  batchGroupOf?(key: string): number;
  /** Whether grants and renewals wait for replicas (runConfirmed then costs a WAIT). */
  readonly confirmsWrites: boolean;
  /** One bounded SCAN step for keys matching `pattern` ('0' starts and ends a walk); absent: the store cannot list its locks. */
  scan?(cursor: string, pattern: string, count: number): Promise<{ keys: string[]; cursor: string }>;
  /** The connection lock channels are subscribed on. */
  readonly subscriber: Subscriber;
  /** Why no grant may be made now on the lock `key` belongs to (a quarantine, Redis away), or null. */
  grantsBlocked(key: string): string | null;
  /** How long until grants on `key` may be made again (0: now). */
  grantsResumeInMs(key: string): number;
  /** performance.now() of the latest master change seen for `key` (-Infinity: none). */
  lastFailoverAt(key: string): number;
  /** Reconnected, and not yet sure whether `key`'s master changed. */
  verifying(key: string): boolean;
  /**
   * Whether a grant on `key` is checked against its master inside the script (a Cluster with the
   * quarantine): a release's hand-off is not, so it must go through the claim script instead.
   */
  checksMaster(key: string): boolean;
}
