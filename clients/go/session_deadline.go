package holdfast

import "time"

// The deadline of a lease held under a session (docs/sessions.md, "Locks held under a session").
//
// Every lease time of a session counts from when the server received the stream, so the client
// counts from when it opened it: that is one anchor. Each pong is another: the server received the
// ping receivedAfter after the stream's start, and not before the client sent it, so a lease time
// T >= receivedAfter started no earlier than T - receivedAfter after the ping was sent. Each anchor
// gives a valid lower bound with drift counted only since it; the latest of them is kept.
// clients/conformance/session-deadline.json holds the cases every SDK runs.

// anchor is a moment on this side's clock (sentAt) and the server's time for it (receivedAfter,
// counted from the stream's start): the open (0), or a ping and its pong.
type anchor struct {
	sentAt        time.Time
	receivedAfter time.Duration
}

// pongsKept is how many of the latest pongs a session keeps as anchors, besides the open: a
// renewal that started before the latest ping was received can still count from the one before.
const pongsKept = 2

// sessionAnchors are the open and the latest pongs of one session.
type sessionAnchors struct {
	opened anchor
	pongs  []anchor // oldest first, at most pongsKept
}

func newSessionAnchors(openedAt time.Time) sessionAnchors {
	return sessionAnchors{opened: anchor{sentAt: openedAt}}
}

// addPong keeps the pong of a ping sent at sentAt, dropping the oldest beyond pongsKept.
func (a *sessionAnchors) addPong(sentAt time.Time, receivedAfterMs int64) {
	a.pongs = append(a.pongs, anchor{sentAt: sentAt, receivedAfter: time.Duration(receivedAfterMs) * time.Millisecond})
	if len(a.pongs) > pongsKept {
		a.pongs = append(a.pongs[:0], a.pongs[len(a.pongs)-pongsKept:]...)
	}
}

// deadline is the conservative end of a lease (re)started leaseStartedAfterMs after the
// session's start for ttlMs.
func (a *sessionAnchors) deadline(leaseStartedAfterMs, ttlMs int64) time.Time {
	started, ttl := time.Duration(leaseStartedAfterMs)*time.Millisecond, time.Duration(ttlMs)*time.Millisecond
	return latestAnchoredDeadline(a.list(), started, ttl)
}

// list is the open, then the pongs kept.
func (a *sessionAnchors) list() []anchor {
	return append([]anchor{a.opened}, a.pongs...)
}

// latestAnchoredDeadline is the latest deadline any anchor vouches for; an anchor received after
// the lease started says nothing about it.
func latestAnchoredDeadline(anchors []anchor, leaseStartedAfter, ttl time.Duration) time.Time {
	var latest time.Time
	for _, a := range anchors {
		if a.receivedAfter > leaseStartedAfter {
			continue
		}
		latest = laterDeadline(latest, LeaseDeadline(a.sentAt, leaseStartedAfter-a.receivedAfter, ttl))
	}
	return latest
}
