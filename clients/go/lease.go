// Package holdfast is the Go client of the holdfast lock server: Hold keeps a lock through the
// Hold stream, Session.Hold keeps many under one session stream, and each Lease reports, on Done,
// the moment it can no longer be trusted. That moment is LeaseDeadline of the latest confirmation
// (see deadline.go; a session's: session_deadline.go); it only moves forward, and a grant or
// renewal that arrives after its own deadline ends the lease at once.
//
// The generated stubs are in github.com/holdfast/holdfast/clients/go/gen/holdfast/v1.
package holdfast

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

// Options shape one Hold. The zero value asks for the server's default lease and no waiting.
type Options struct {
	// TTL is the lease length; 0 means the server default.
	TTL time.Duration
	// Wait is how long to queue for the lock; 0 means try once.
	Wait time.Duration
	// Owner names the holder; a non-empty owner re-enters a lock it already holds.
	Owner string
	// Shared asks for a shared (read) lock instead of an exclusive one.
	Shared bool
	// Limit makes the lock a counting semaphore of that size; 0 or 1 is a plain lock.
	Limit uint32
	// MaxHold caps how long the server keeps this hold; 0 leaves the server's cap.
	MaxHold time.Duration
	// ReleaseOnDisconnect opts in to the old fast release: the server frees the lock the moment the
	// stream ends, however it ends. That gives up the guarantee that a holder that is only paused
	// or cut off never believes it holds a lock someone else has.
	ReleaseOnDisconnect bool
	// Value is published to watchers with the grant (at most 1024 bytes), e.g. a leader's address.
	Value string
}

// ErrNotAcquired is returned by Hold when the lock was not granted within Options.Wait.
var ErrNotAcquired = errors.New("holdfast: lock not acquired in time")

// ErrReleased is Lease.Err after Release.
var ErrReleased = errors.New("holdfast: lease released")

// LostError says why a lease was lost. Code is LOST_REASON_UNSPECIFIED when the client decided
// alone (its local deadline passed, a confirmation came after it, or the stream broke without a
// lost event). Hold returns one when the grant itself came too late.
type LostError struct {
	Name   string
	Reason string
	Code   holdfastv1.LostReason
}

func (e *LostError) Error() string {
	return fmt.Sprintf("holdfast: lock %q lost: %s", e.Name, e.Reason)
}

const (
	// acquireGrace is how long past Options.Wait Hold waits for the server's own answer.
	acquireGrace = 2 * time.Second
	// releaseTimeout bounds the Release call before the stream is cancelled anyway.
	releaseTimeout      = 5 * time.Second
	localDeadlineReason = "no renewal was confirmed before the local deadline"
)

// Lease is one grant kept alive by its own Hold stream (Hold) or by a session (Session.Hold).
type Lease struct {
	client       holdfastv1.LockServiceClient
	name         string
	token        string
	holdID       string
	fencingToken uint64
	keeper       leaseKeeper
	done         chan struct{}

	mu          sync.Mutex
	signedFence string // the newest signed fence (a Hold's renewals bring fresh ones)
	deadline    time.Time
	timer       *time.Timer
	err         error
	releasing   bool
}

// leaseKeeper is what keeps a lease's hold on the server: a Hold stream of its own, or a session.
type leaseKeeper interface {
	// giveBack returns the hold (with its token and hold id) when held is true, or lets the server
	// drop it when the lease was lost; then the lease hears nothing more from the keeper.
	giveBack(l *Lease, held bool) error
	// lost is told once the lease is lost, whoever found out; it must not wait.
	lost(l *Lease)
}

func newLease(client holdfastv1.LockServiceClient, name string, grant *holdfastv1.HoldAcquired, keeper leaseKeeper) *Lease {
	return &Lease{
		client: client, name: name, token: grant.Token, holdID: grant.HoldId, fencingToken: grant.FencingToken,
		signedFence: grant.SignedFence, keeper: keeper, done: make(chan struct{}),
	}
}

// holdRequest is the HoldRequest that opts ask for.
func holdRequest(name string, opts Options) *holdfastv1.HoldRequest {
	mode := holdfastv1.LockMode_LOCK_MODE_EXCLUSIVE
	if opts.Shared {
		mode = holdfastv1.LockMode_LOCK_MODE_SHARED
	}
	return &holdfastv1.HoldRequest{
		Name: name, Owner: opts.Owner, TtlMs: opts.TTL.Milliseconds(), WaitTimeoutMs: opts.Wait.Milliseconds(),
		Mode: mode, Limit: opts.Limit, MaxHoldMs: opts.MaxHold.Milliseconds(), ReleaseOnDisconnect: opts.ReleaseOnDisconnect,
		Value: opts.Value,
	}
}

// notAcquired is the error for a hold not granted within opts.Wait.
func notAcquired(name string, opts Options) error {
	return fmt.Errorf("%w: %q within %v", ErrNotAcquired, name, opts.Wait)
}

// Name is the lock's name.
func (l *Lease) Name() string { return l.name }

// SetValue replaces the value this grant publishes to watchers; NOT_FOUND once the grant is gone.
func (l *Lease) SetValue(ctx context.Context, value string) error {
	_, err := l.client.SetValue(ctx, &holdfastv1.SetValueRequest{Name: l.name, Token: l.token, Value: value})
	return err
}

// Token is the grant's secret token (it works with Release and Renew).
func (l *Lease) Token() string { return l.token }

// HoldID names this stream's own hold of the grant (a reentrant grant has one per holder).
func (l *Lease) HoldID() string { return l.holdID }

// FencingToken is the grant's fencing token: pass it to whatever the lock protects.
func (l *Lease) FencingToken() uint64 { return l.fencingToken }

// SignedFence is the grant's signed fence ("" from a server without a fence signing key): the
// namespace, lock, fencing token and lease end, signed by the server. A Hold's renewals replace
// it with one stating the renewed lease's end; a lease under a Session keeps its grant's, which
// states no end. FenceHeader and FenceContext send it.
func (l *Lease) SignedFence() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.signedFence
}

// renewedFence keeps a renewal's fresh signed fence.
func (l *Lease) renewedFence(fences []string) {
	if len(fences) == 0 || fences[0] == "" {
		return
	}
	l.mu.Lock()
	l.signedFence = fences[0]
	l.mu.Unlock()
}

// Done is closed when the lease ends: lost, released, or its context ended.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err is nil while the lease is held, then a *LostError, ErrReleased, or the context's error.
// It checks the deadline first: a process that was paused past it sees the loss at its first
// look, before the timer has had a chance to run.
func (l *Lease) Err() error {
	l.mu.Lock()
	err, passed := l.err, l.err == nil && deadlinePassed(l.deadline, time.Now())
	l.mu.Unlock()
	if passed {
		l.end(&LostError{Name: l.name, Reason: localDeadlineReason})
		return l.Err()
	}
	return err
}

// Deadline is the conservative end of the lease (LeaseDeadline of the latest confirmation): it
// counts as lost from then on unless a renewal has moved it.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// confirmDeadline moves the deadline forward to what a grant or renewal vouches for; a
// confirmation whose deadline has already passed ends the lease.
func (l *Lease) confirmDeadline(deadline time.Time, what string) {
	if late := l.moveDeadline(deadline); late {
		l.end(&LostError{Name: l.name, Reason: what + " arrived after the lease could have ended"})
	}
}

// moveDeadline takes the later of the two deadlines and arms the timer for it, unless it has passed.
func (l *Lease) moveDeadline(deadline time.Time) (late bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return false
	}
	l.deadline = laterDeadline(l.deadline, deadline)
	now := time.Now()
	if deadlinePassed(l.deadline, now) {
		return true
	}
	left := l.deadline.Sub(now)
	if l.timer == nil {
		l.timer = time.AfterFunc(left, l.checkDeadline)
	} else {
		l.timer.Reset(left)
	}
	return false
}

func (l *Lease) checkDeadline() {
	l.mu.Lock()
	now := time.Now()
	passed := deadlinePassed(l.deadline, now)
	if !passed && l.err == nil { // a renewal raced the timer
		l.timer.Reset(l.deadline.Sub(now))
	}
	l.mu.Unlock()
	if passed {
		l.end(&LostError{Name: l.name, Reason: localDeadlineReason})
	}
}

// isReleasing says whether Release has begun (the keeper's end is then no loss).
func (l *Lease) isReleasing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.releasing
}

// end records why the lease ended (the first reason wins) and closes Done.
func (l *Lease) end(err error) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = err
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
	// The keeper lets go of a lost lease before Done closes: whoever waits on Done then finds
	// the session no longer keeping it (Stats). Only the first end gets here, so one close.
	if lost := (*LostError)(nil); errors.As(err, &lost) {
		l.keeper.lost(l)
	}
	close(l.done)
}

// Release gives back exactly this lease's hold (Release with the token and hold id; over the
// session for a lease held under one), then stops keeping it. It returns the loss error when the
// lease had been lost before (the work done under it may not have been exclusive).
func (l *Lease) Release() error {
	lostErr := l.Err() // a deadline that has passed counts as a loss here too
	l.mu.Lock()
	already, held := l.releasing, lostErr == nil
	l.releasing = true
	l.mu.Unlock()
	if already {
		return nil
	}
	err := l.keeper.giveBack(l, held)
	l.end(ErrReleased)
	if !held {
		return lostErr
	}
	return err
}
