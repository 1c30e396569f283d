// Where lock state lives, as the engine sees it: named requests in, named answers out, one method
// per lock operation. Each topology is one implementation and maps them onto its own scripts: one
// Redis, Sentinel or a Cluster onto the lua/<operation>-<keys>.lua functions (src/redis/store.ts),
// Redlock's independent masters onto majority rounds (src/redlock/store.ts). A store owns its
// connections, function loading, pipelines per node, the replicas' acknowledgement (WAIT), slot
// refreshes and the failover quarantine, and builds its keys with keys.ts (every key with a TTL,
// one hash tag per lock, so each call touches one slot). The engine never learns which topology
// it is on; what a store cannot do it says through its capabilities (queues, refusal, scanLocks),
// and the engine asks before acting. Redis trouble becomes LockError('unavailable').
import type { LockError } from './errors';
import type { AcquireParams, FenceCheck, HolderInfo, Mode, VanishReason } from './types';

/** One lock as storage finds it: its namespace's key prefix and its name. */
export interface LockRef {
  readonly prefix: string;
  readonly name: string;
  /**
   * The store's own note of where the lock lives, kept on a long-lived reference (a kept lease:
   * present, even if undefined) so each renewal need not work it out again. Only the store reads it.
   */
  storeNote?: unknown;
}

/** A grant as storage made it; the engine adds when its lease started (Grant.leaseStart). */
export interface GrantRecord {
  token: string;
  /** Decimal string. */
  fencingToken: string;
  /** The lease left when it was made (ms). */
  ttlMs: number;
  holdCount: number;
}

/** Why the lock's state refuses a request. */
export type Refusal =
  | { why: 'limit_mismatch'; limit: number }
  | { why: 'upgrade' }
  | { why: 'request_id_reused' }
  | { why: 'too_many_waiters'; maxWaiters: number };

export interface AcquireRequest {
  lock: LockRef;
  /** The new grant's secret (and a queued waiter's future grant's). */
  token: string;
  /** '' for no reentrancy. */
  owner: string;
  ttlMs: number;
  mode: Mode;
  /** 1 for a plain or read-write lock, N > 1 for a counting semaphore. */
  limit: number;
  /** '' for none. */
  requestId: string;
  /** '' tries once; otherwise queue under this id when not granted (a store that queues). */
  waiterId: string;
  /** How long a queue entry lives unless its server refreshes it. */
  entryLeaseMs: number;
  /** A Hold stream's hold; '' for Acquire. */
  holdId: string;
  /** Queue no one past this many waiters; 0 for no cap. */
  maxWaiters: number;
  /** Published to watchers with a new grant; '' for none. */
  value: string;
  /** The caller's identity for deadlock detection when owner is '' (a session's); absent: none. */
  waitAs?: string;
}

export type AcquireAnswer =
  /** `confirmed`: the replicas the topology asks for acknowledged it (always true when none is asked). */
  | { outcome: 'granted'; grant: GrantRecord; confirmed: boolean }
  | { outcome: 'not_granted'; nextExpiryMs: number }
  | { outcome: 'queued'; nextExpiryMs: number }
  | { outcome: 'refused'; refusal: Refusal };

export interface ReleaseRequest {
  lock: LockRef;
  token: string;
  /** A Hold stream's hold; '' gives back one hold of the grant. */
  holdId: string;
  /** The holder did not let go itself: the lock stays closed until its lease has run out (and lockDelayMs). */
  vanished: boolean;
  lockDelayMs: number;
  /** With vanished: how long the holder's own lease may still run; absent: the grant's whole lease. */
  vanishedLeaseMs?: number;
  /**
   * The server whose queued waiters the freed lock goes to at once, named in the answer ('' for
   * none). A hand-off is a grant: a store that confirms writes confirms it in the same round trip.
   */
  handOffTo: string;
  /** With vanished: why the holder's stream ended, told to watchers ('' : 'disconnected'). */
  why: VanishReason | '';
}

/** A grant a release made for one of the releasing server's queued waiters. */
export interface HandOff {
  waiterId: string;
  grant: GrantRecord;
  holdId: string;
}

export type ReleaseAnswer =
  | { held: false }
  | {
      held: true;
      /** The lock is free (or closed only until a vanished holder's lease ends). */
      freed: boolean;
      holdCount: number;
      /** The Hold stream's hold given back ('' for one taken by Acquire). */
      holdId: string;
      handedOff: HandOff[];
      /** Whether the replicas acknowledged the hand-offs (true when none was asked). */
      confirmed: boolean;
    };

export interface RenewRequest {
  lock: LockRef;
  token: string;
  /** Renew to now + ttlMs (never shorter than the lease now); 0 keeps the grant's lease length. */
  ttlMs: number;
  /** A Hold stream renewing its own hold (renewed only while the grant has it); absent: the grant. */
  holdId?: string;
  /** Answer with the grant's fencing token too (a signed fence names it); single renewals only. */
  withFence?: boolean;
}

/** 'taken': someone else holds the lock now; 'hold_released': the grant lives but this hold was given back. */
export type NotRenewedReason = 'expired' | 'taken' | 'hold_released';

export type RenewAnswer =
  /**
   * The lease now ends leftMs after the renewal was sent; `confirmed` as for a grant;
   * fencingToken when asked for (withFence); in Redlock mode, only when a majority of the renewing masters report the same one.
   */
  { renewed: true; leftMs: number; confirmed: boolean; fencingToken?: string } | { renewed: false; why: NotRenewedReason };

export interface ClaimRequest {
  lock: LockRef;
  /** The queue entries of these waiters are refreshed for this long. */
  entryLeaseMs: number;
  waiterIds: string[];
}

export type ClaimEntry =
  | { outcome: 'granted'; grant: GrantRecord }
  | { outcome: 'queued' }
  /** The entry expired, or the grant the queue served it was lost. */
  | { outcome: 'gone' }
  | { outcome: 'refused'; refusal: Refusal }
  /** Ended to break a deadlock (WaitGraph.abortWait): the message names the cycle. */
  | { outcome: 'aborted'; message: string };

export interface ClaimAnswer {
  /** How long until the earliest lease on the lock ends (-1: none). */
  nextExpiryMs: number;
  /** One per waiter id, in order. */
  waiters: ClaimEntry[];
  /** Whether the replicas acknowledged the grants (true when none was asked). */
  confirmed: boolean;
}

/** A lock's state, without tokens. */
export interface LockRecord {
  /** The last fencing token granted (decimal). */
  fencingToken: string;
  limit: number;
  /** Queued waiters (0 on a store without a queue). */
  waiters: number;
  /** In no particular order; a vanished holder shows with hold count 0. */
  holders: HolderInfo[];
}

export interface RequestIdTie {
  prefix: string;
  requestId: string;
  /** What was asked, encoded by the engine: the id is tied to exactly this. */
  asked: string;
  /** How long to remember the tie after this use. */
  rememberMs: number;
}

/** One of an owner's waits, as its wait record says (an index: WaitGraph.waitEdge checks it). */
export interface WaitRecord {
  waiterId: string;
  /** The lock's name (in the walking engine's namespace). */
  name: string;
  /** When the wait began (ms, the storage's clock where the record lives). */
  since: number;
}

/** A waiter's edges, read on its lock's slot. */
export interface WaitEdge {
  /** Whether the waiter still waits (queued, live entry, not served). */
  waiting: boolean;
  /** When the waiter was queued (ms, the lock's slot's Redis TIME); 0 when not waiting or not known. */
  queuedAt: number;
  /** The owners of the lock's live grants, other than the waiter's own and without ''. Empty when not waiting. */
  holders: string[];
}

/**
 * Who waits for whom, for deadlock detection (src/engine/deadlocks.ts): a store that queues and
 * can be walked one slot per step. Owners' records live in their own slot (keys.ts waitsKey),
 * each with an end; each edge is checked on its lock's slot.
 */
export interface WaitGraph {
  /** Records that `owner` waits for lock `name` as waiter `waiterId`, begun waitedMs ago, needed for keepMs. Resolves with since. */
  noteWait(request: { prefix: string; owner: string; waiterId: string; name: string; waitedMs: number; keepMs: number }): Promise<number>;
  /** Removes that record. */
  forgetWait(request: { prefix: string; owner: string; waiterId: string }): Promise<void>;
  /** The owner's live wait records. */
  waitsOf(request: { prefix: string; owner: string }): Promise<WaitRecord[]>;
  /** Whether the waiter still waits on `lock`, and for whose grants. */
  waitEdge(request: { lock: LockRef; waiterId: string; owner: string }): Promise<WaitEdge>;
  /** Ends the waiter's wait with `message` if it still waits (its server's claim answers it 'aborted'): whether it did. */
  abortWait(request: { lock: LockRef; waiterId: string; message: string }): Promise<boolean>;
}

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
   * Whether a waiter can queue here (acquire answers 'queued', releases hand the lock over, claim
   * and dequeue serve the queue); false: acquire only grants or refuses, and the engine's waiters
   * retry (retry-wait.ts), never calling claim or dequeue.
   */
  readonly queues: boolean;
  /** Whether grants and renewals wait for replicas (a confirmed call then costs a WAIT). */
  readonly confirmsWrites: boolean;
  /** Why this store refuses `op` (with these acquire params), or null; absent: it refuses nothing. */
  refusal?(op: StoreOp, params?: AcquireParams): LockError | null;

  /** Grants, re-enters, queues (with a waiterId) or refuses; a grant is confirmed in the same round trip. */
  acquire(request: AcquireRequest): Promise<AcquireAnswer>;
  /** Gives back one hold; the lock goes to the queue (or request.handOffTo's waiters) when the last goes. */
  release(request: ReleaseRequest): Promise<ReleaseAnswer>;
  /** Renews one lease, confirmed in the same round trip. */
  renew(request: RenewRequest): Promise<RenewAnswer>;
  /**
   * Renews many leases on one node (nodeOf) in one round trip, batched as the topology allows
   * and confirmed together. Never throws: one answer per request, in order, or the Error that
   * kept it from being renewed (unreachable, not confirmed by the replicas): it may be tried again.
   */
  renewMany(requests: RenewRequest[]): Promise<(RenewAnswer | Error)[]>;
  /** A queue's server brings the lock up to date for its waiters: serves them, refreshes their entries. */
  claim(request: ClaimRequest): Promise<ClaimAnswer>;
  /** Takes a waiter out of the queue, dropping a grant the queue served it meanwhile. */
  dequeue(request: { lock: LockRef; waiterId: string }): Promise<void>;
  inspect(lock: LockRef): Promise<LockRecord>;
  checkFencingToken(request: { lock: LockRef; fencingToken: string }): Promise<FenceCheck>;
  /** Ties a request id to the one request it was first used for, on any lock: false when it was used for another. */
  tieRequestId(request: RequestIdTie): Promise<boolean>;
  /** Replaces the value a live grant publishes to watchers: its fencing token, or null when the token holds nothing. */
  setValue(request: { lock: LockRef; token: string; value: string }): Promise<{ fencingToken: string } | null>;
  /**
   * One bounded SCAN step through the locks of `prefix` with holders or waiters whose names start
   * with `namePrefix`: names found (possibly repeated across steps) and where to go on ('0': done).
   * Absent: the store cannot list its locks.
   */
  scanLocks?(prefix: string, cursor: string, count: number, namePrefix: string): Promise<{ names: string[]; cursor: string }>;

  /** Who waits for whom, for deadlock detection; absent: the store cannot tell (Redlock), and nothing is walked. */
  readonly waitGraph?: WaitGraph;

  /** The connection lock channels are subscribed on. */
  readonly subscriber: Subscriber;
  /** The channel `lock`'s changes and wake-ups are published on (subscribe it on `subscriber`). */
  channelOf(lock: LockRef): string;
  /** Names the node `lock` lives on now, so renewals can be split per node for renewMany ('' for one node). */
  nodeOf(lock: LockRef): string;
  /** Why no grant may be made now on `lock` (a quarantine, Redis away), or null. */
  grantsBlocked(lock: LockRef): string | null;
  /** How long until grants on `lock` may be made again (0: now). */
  grantsResumeInMs(lock: LockRef): number;
  /** performance.now() of the latest master change seen for `lock` (-Infinity: none). */
  lastFailoverAt(lock: LockRef): number;
  /** Reconnected, and not yet sure whether `lock`'s master changed. */
  verifying(lock: LockRef): boolean;
  /**
   * Whether a grant on `lock` is checked against its master inside the script (a Cluster with the
   * quarantine): a release's hand-off is not, so it must go through claim instead.
   */
  checksMaster(lock: LockRef): boolean;
}
