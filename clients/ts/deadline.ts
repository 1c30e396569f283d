// The earliest moment a lease can end, on this side's clock, whatever the network did meanwhile.
//
// The server says when, after it received the request, it started a grant or renewal
// (lease_started_after_ms, its monotonic clock); Redis then counts ttl_ms. The request cannot have
// been received before it was sent, so the lease ends no earlier than
//   sentAt + leaseStartedAfterMs + ttlMs
// on this side's clock, less what the three clocks (client, server, Redis) may disagree about the
// length of that interval. No assumption about how long a message spent on the way: a confirmation
// that arrives late only yields a deadline that is already past.
//
// clients/conformance/lease-deadline.json holds the cases every SDK's deadline runs.

/**
 * Clock-rate allowance: 5 ms, plus 100 ppm of the interval counted (client, server and Redis
 * clocks may each run that much fast or slow against one another).
 */
export const CLOCK_DRIFT = { fixedMs: 5, rate: 1e-4 } as const;

/** The drift allowance for a lease that ends `countedMs` after its request was sent. */
export function driftMarginMs(countedMs: number): number {
  return CLOCK_DRIFT.fixedMs + countedMs * CLOCK_DRIFT.rate;
}

/**
 * The conservative end of a lease, on the clock `sentAt` was read from (performance.now()):
 * `sentAt` is when the request was sent, taken just before the call started.
 */
export function leaseDeadline(sentAt: number, leaseStartedAfterMs: number, ttlMs: number): number {
  const countedMs = leaseStartedAfterMs + ttlMs;
  return sentAt + countedMs - driftMarginMs(countedMs);
}

/**
 * The deadline a lease keeps after a confirmation whose own deadline is `confirmed`: the later of
 * the two. The server never shortens a lease (lua/renew-3.lua), so an earlier one says nothing new.
 */
export function laterDeadline(kept: number, confirmed: number): number {
  return Math.max(kept, confirmed);
}

/**
 * Whether a lease with this deadline is (or may be) lost at `now`: from its deadline on it may be
 * someone else's, so a confirmation arriving then, or a look at the clock, finds it lost.
 */
export function deadlinePassed(deadline: number, now: number): boolean {
  return now >= deadline;
}

/** A performance.now() moment as epoch milliseconds. */
export function toEpochMs(monotonic: number): number {
  return Date.now() + (monotonic - performance.now());
}
