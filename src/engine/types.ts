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
}

export interface Grant {
  token: string;
  /** Decimal string: fencing tokens use more digits than a float keeps in some clients. */
  fencingToken: string;
  ttlMs: number;
  holdCount: number;
  /** performance.now() just before the script that set this lease was sent: the lease ends no earlier than leaseStart + ttlMs. */
  leaseStart: number;
}

export interface ReleaseResult {
  released: boolean;
  holdCount: number;
}

export interface HolderInfo {
  owner: string;
  fencingToken: string;
  ttlMs: number;
  holdCount: number;
  mode: Mode;
}

export interface LockInfo {
  name: string;
  holders: HolderInfo[];
  waiters: number;
  fencingToken: string;
  limit: number;
}

export interface FenceCheck {
  live: boolean;
  ttlMs: number;
  mode: Mode | 0;
  latestFencingToken: string;
}
