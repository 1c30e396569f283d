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

/** Turns a confirmation's lease_started_after_ms and ttl_ms into a deadline on this side's clock. */
export type LeaseClock = (leaseStartedAfterMs: number, ttlMs: number) => number;

/** The clock of a lease whose times count from one request, sent at `sentAt`. */
export function countedFrom(sentAt: number): LeaseClock {
  return (leaseStartedAfterMs, ttlMs) => leaseDeadline(sentAt, leaseStartedAfterMs, ttlMs);
}

/**
 * A moment the client knows the server's session clock had not passed: the server received a
 * message sent at `sentAt` (performance.now()) `receivedAfterMs` after the session's start. The
 * stream's open is one (receivedAfterMs 0), every pong another.
 */
export interface Anchor {
  sentAt: number;
  receivedAfterMs: number;
}

/**
 * The conservative end of a lease held under a session (clients/conformance/session-deadline.json):
 * the latest deadline any anchor vouches for. An anchor received after the lease started says
 * nothing about it; from one received before, only the time since it was sent carries drift, so
 * pings keep the allowance small however old the session is.
 */
export function sessionLeaseDeadline(anchors: readonly Anchor[], leaseStartedAfterMs: number, ttlMs: number): number {
  let deadline = -Infinity;
  for (const { sentAt, receivedAfterMs } of anchors) {
    if (receivedAfterMs <= leaseStartedAfterMs) deadline = Math.max(deadline, leaseDeadline(sentAt, leaseStartedAfterMs - receivedAfterMs, ttlMs));
  }
  return deadline;
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
