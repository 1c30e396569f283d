// The bounds every layer reads: the wire's ranges (checked once, by the transport), the config
// schema's, and the server's own lease cap (--max-ttl-ms), which the engine applies.

/** The shortest and longest lease the wire accepts (ttl_ms). */
export const MIN_TTL_MS = 10;
export const MAX_TTL_MS = 86_400_000;
/** The longest max_hold_ms the wire accepts: a year of the longest lease. */
export const MAX_HOLD_MS = MAX_TTL_MS * 365;
/** The longest wait the wire accepts (wait_timeout_ms). */
export const MAX_WAIT_MS = 86_400_000;

/**
 * Why a lease of `ttlMs` is refused by a server whose longest lease is `maxTtlMs` (a longer one
 * would outlast a failover quarantine), or null: the one wording of that rule.
 */
export function ttlCapProblem(ttlMs: number, maxTtlMs: number): string | null {
  return ttlMs > maxTtlMs ? `ttl_ms ${ttlMs} is longer than this server's longest lease (${maxTtlMs} ms)` : null;
}
