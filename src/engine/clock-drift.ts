// The clients' clock-drift allowance, as the server needs it: the SDKs count a lease's deadline
// with it (clients/conformance/lease-deadline.json, "drift"), and the end rule of a lease group
// waits it out, both ways, before it gives back the holds of a call that ended at its deadline.
// The SDK's own copy is clients/ts/deadline.ts; test/engine/lease-group.test.ts checks that
// this one matches the conformance file every SDK runs.

/** 5 ms, plus 100 ppm of the interval counted (client, server and Redis clocks may each run that much fast or slow). */
export const CLOCK_DRIFT = { fixedMs: 5, rate: 1e-4 } as const;

/** The drift allowance for an interval of `countedMs`. */
export function driftMarginMs(countedMs: number): number {
  return CLOCK_DRIFT.fixedMs + countedMs * CLOCK_DRIFT.rate;
}

/**
 * How long to wait, once a call ended at its deadline, before giving its holds back. The client
 * set the deadline `callMs` after it sent the request and ends the call on its own clock, which
 * started before the server's: the server's deadline passes after the client's, but for the two
 * clocks' rates. Twice the allowance covers that drift both ways, so the holds go only once the
 * client has stopped counting on them.
 */
export function deadlineEndWaitMs(callMs: number): number {
  return 2 * driftMarginMs(Math.max(0, callMs));
}
