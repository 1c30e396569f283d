// What every fence store does: compare a request's token with the newest seen for its lock and
// record it when it is not older, as one atomic step.

export interface FenceDecision {
  /** True when the token is not older than the newest seen (equal: the same holder again). */
  accepted: boolean;
  /** The newest token for the lock after this check (the request's own when accepted). */
  newest: bigint;
}

export interface FenceStore {
  check(lock: string, token: bigint): Promise<FenceDecision>;
}
