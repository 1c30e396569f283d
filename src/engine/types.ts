// Plain values the lock engine takes and gives; the transport maps them to and from the wire.

/** Same numbers as holdfast.v1.LockMode. */
export const Mode = { EXCLUSIVE: 1, SHARED: 2 } as const;
export type Mode = (typeof Mode)[keyof typeof Mode];

export interface AcquireParams {
  name: string;
  /** '' for no reentrancy. */
  owner: string;
  ttlMs: number;
  /** 0 tries once without queueing. */
  waitMs: number;
  mode: Mode;
  /** 1 for a plain or read-write lock, N > 1 for a counting semaphore. */
  limit: number;
  /** '' for none. */
  requestId: string;
  /** Names the hold when a Hold stream asks, so that its end gives back exactly this hold; '' for Acquire. */
  holdId: string;
  /** Published to watchers with a new grant; '' for none. */
  value: string;
  /**
   * Who this caller is for deadlock detection when it names no owner (a session's identity);
   * unlike owner it gives no reentrancy. Absent or '': the owner alone (docs/deadlocks.md).
   */
  waitAs?: string;
}

export interface Grant {
  token: string;
  /** Decimal string: fencing tokens use more digits than a float keeps in some clients. */
  fencingToken: string;
  /** The lease left when the script ran: at least the lease asked for, more for a re-entered grant. */
  ttlMs: number;
  holdCount: number;
  /** performance.now() just before the script that set this lease was sent: the lease ends no earlier than leaseStart + ttlMs. */
  leaseStart: number;
}

export interface ReleaseResult {
  released: boolean;
  holdCount: number;
  /** The Hold stream's hold that was given back ('' for one taken by Acquire). */
  holdId: string;
}

export interface ReleaseOptions {
  /** Gives back exactly this Hold stream's hold; '' or absent gives back one hold of the grant. */
  holdId?: string;
  /**
   * The holder did not let go itself (its connection dropped, or the server ended its stream):
   * it may still count on its lease, so the lock stays closed until the lease has run out, and
   * lockDelayMs longer.
   */
  vanished?: boolean;
  /** With vanished: how long the holder's own lease may still run (default: the grant's whole lease). */
  vanishedLeaseMs?: number;
  lockDelayMs?: number;
  /** With vanished: why the holder's stream ended, told to watchers (default 'disconnected'). */
  why?: VanishReason;
}

/** Why a Hold stream ended without its holder's word, as watchers are told. */
export type VanishReason = 'disconnected' | 'max_hold' | 'backend_unavailable' | 'server_shutdown';

export interface HolderInfo {
  owner: string;
  fencingToken: string;
  ttlMs: number;
  /** 0 for a holder that vanished: the lock stays closed until its lease has run out. */
  holdCount: number;
  mode: Mode;
  /** The value the holder publishes; '' for none. */
  value: string;
}

export interface LockInfo {
  name: string;
  holders: HolderInfo[];
  waiters: number;
  fencingToken: string;
  limit: number;
  /** How long until this server makes new grants again (a quarantine after a Redis failover); 0: it grants now. */
  grantsResumeInMs: number;
}

/** One step of a walk through the locks with holders or waiters (LockEngine.scanLocks). */
export interface LockScan {
  names: string[];
  /** Where to go on from; '0' when the walk is complete. */
  cursor: string;
}

export interface FenceCheck {
  live: boolean;
  ttlMs: number;
  mode: Mode | 0;
  latestFencingToken: string;
}

// What a kept lease (a Hold stream's) is asked for and tells: the watchdog keeps it.

export type LostReason = 'expired' | 'taken' | 'backend_unavailable' | 'server_shutdown' | 'max_hold' | 'released' | 'failover';

export interface LeaseEvents {
  /** A renewal was confirmed: the lease now ends no earlier than leaseStart + ttlMs (performance.now()). */
  onRenewed(ttlMs: number, leaseStart: number): void;
  onLost(reason: LostReason, message: string): void;
}

export interface KeepRequest {
  name: string;
  token: string;
  /** This stream's hold of the grant. */
  holdId: string;
  /** The grant's fencing token, told with its renewals (a signed fence names it); absent: ''. */
  fencingToken?: string;
  ttlMs: number;
  /** 0 for no cap. */
  maxHoldMs: number;
  /** How long the lock stays closed after a vanished holder's lease has run out. */
  lockDelayMs: number;
  /** Free the lock at once however the hold ends (gives up the guarantee for a vanished holder). */
  releaseOnDisconnect: boolean;
}

export interface KeptLease {
  /** The holder let go (a cancel from a live client): stop renewing and give the hold back now. */
  letGo(): Promise<void>;
  /** The holder vanished: stop renewing and give the hold back once its lease has run out. */
  abandon(): Promise<void>;
}
