package holdfast

import "time"

// The earliest moment a lease can end, whatever the network did meanwhile.
//
// The server says when, after it received the Hold request, it started a grant or renewal
// (lease_started_after_ms, its monotonic clock); Redis then counts ttl_ms. The request cannot have
// been received before it was sent, so the lease ends no earlier than
//
//	sentAt + leaseStartedAfter + ttl - DriftMargin(leaseStartedAfter + ttl)
//
// No assumption about how long a message spent on the way: a confirmation that arrives late only
// yields a deadline that is already past. clients/conformance/lease-deadline.json holds the cases
// every SDK's deadline runs.

// Clock-rate allowance: DriftFixed plus DriftRate (100 ppm) of the interval counted, as the
// client, server and Redis clocks may each run that much fast or slow against one another.
const (
	DriftFixed = 5 * time.Millisecond
	DriftRate  = 1e-4
)

// DriftMargin is the clock drift allowance for a lease that ends `counted` after its request was sent.
func DriftMargin(counted time.Duration) time.Duration {
	return DriftFixed + time.Duration(float64(counted)*DriftRate)
}

// LeaseDeadline is the conservative end of a lease whose request was sent at sentAt (read with
// time.Now() just before the call started, so it carries the monotonic clock).
func LeaseDeadline(sentAt time.Time, leaseStartedAfter, ttl time.Duration) time.Time {
	counted := leaseStartedAfter + ttl
	return sentAt.Add(counted - DriftMargin(counted))
}

// laterDeadline is the deadline a lease keeps after a confirmation whose own deadline is confirmed
// (kept is zero before the grant): the later of the two, as the server never shortens a lease.
func laterDeadline(kept, confirmed time.Time) time.Time {
	if confirmed.After(kept) {
		return confirmed
	}
	return kept
}

// deadlinePassed says whether a lease with this deadline is (or may be) lost at now: from its
// deadline on it may be someone else's, so a confirmation arriving then, or a look at the clock,
// finds it lost.
func deadlinePassed(deadline, now time.Time) bool {
	return !now.Before(deadline)
}
