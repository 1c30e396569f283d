// What the defaults guarantee, decided in one place: with no safety flag, no server grants a lock
// while a client SDK may still count an earlier lease of it valid, whatever Redis does (restart
// with or without its data, failover, a promoted replica that missed writes).
//
// - The longest lease is 60 s (etcd's default session TTL): it sizes the quarantine, the time
//   without new grants after Redis may have lost them. A longer cap buys longer leases with a
//   longer outage after a restart: `serve`'s startup line and /readyz say what it costs.
// - Every topology quarantines a master it cannot prove holds every grant made on it.
// - Behind Sentinel, every grant and renewal waits for the master's replicas (WAIT), and a master
//   that would accept writes cut off from them (min-replicas-to-write 0) is refused at start.
// - One flag gives it all up, for users who prefer availability: --unsafe-no-failover-safety.

/** The longest lease a server grants unless --max-ttl-ms says otherwise (all topologies). */
export const SAFE_MAX_TTL_MS = 60_000;

/** Added to the longest lease for the quarantine: clock-rate drift and the time to notice a restart. */
export const QUARANTINE_MARGIN_MS = 1000;

/** The flag that trades the guarantee for availability: its name says what it gives up. */
export const UNSAFE_FLAG = '--unsafe-no-failover-safety';

export interface SafetySettings {
  unsafeNoFailoverSafety?: boolean;
  redisSentinels?: unknown[];
}

/** Whether a master this server cannot vouch for is quarantined (the default). */
export function quarantineOn(s: SafetySettings): boolean {
  return !s.unsafeNoFailoverSafety;
}

/** Replicas that acknowledge every grant unless --sync-replicas says otherwise: all of them behind Sentinel. */
export function defaultSyncReplicas(s: SafetySettings): 'auto' | 0 {
  return s.redisSentinels?.length && !s.unsafeNoFailoverSafety ? 'auto' : 0;
}

/** How long a restart that may have lost grants keeps new grants paused. */
export function quarantineMs(maxTtlMs: number, marginMs: number): number {
  return maxTtlMs + marginMs;
}
