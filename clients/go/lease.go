// Package holdfast is the Go client of the holdfast lock server: Hold keeps a lock through the
// Hold stream and reports, on Done, the moment the lease can no longer be trusted. That moment is
// LeaseDeadline of the latest confirmation (see deadline.go); it only moves forward, and a grant or
// renewal that arrives after its own deadline ends the lease at once.
//
// The generated stubs are in github.com/holdfast/holdfast/clients/go/gen/holdfast/v1.
package holdfast

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// Lease is one grant kept alive by an open Hold stream.
type Lease struct {
	ctx          context.Context
	client       holdfastv1.LockServiceClient
	name         string
	token        string
	holdID       string
	fencingToken uint64
	sentAt       time.Time
	stream       holdfastv1.LockService_HoldClient
	cancel       context.CancelFunc
	done         chan struct{}
	readerDone   chan struct{}

	mu        sync.Mutex
	deadline  time.Time
	timer     *time.Timer
	err       error
	releasing bool
}

// Hold acquires name through the Hold stream and keeps it until Release, ctx's end, or loss.
// It returns ErrNotAcquired when the lock is not granted within opts.Wait.
func Hold(ctx context.Context, client holdfastv1.LockServiceClient, name string, opts Options) (*Lease, error) {
	mode := holdfastv1.LockMode_LOCK_MODE_EXCLUSIVE
	if opts.Shared {
		mode = holdfastv1.LockMode_LOCK_MODE_SHARED
	}
	streamCtx, cancel := context.WithCancel(ctx)
	sentAt := time.Now() // the lease's anchor: no later than the request leaves
	stream, err := client.Hold(streamCtx, &holdfastv1.HoldRequest{
		Name: name, Owner: opts.Owner, TtlMs: opts.TTL.Milliseconds(), WaitTimeoutMs: opts.Wait.Milliseconds(),
		Mode: mode, Limit: opts.Limit, MaxHoldMs: opts.MaxHold.Milliseconds(), ReleaseOnDisconnect: opts.ReleaseOnDisconnect,
		Value: opts.Value,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	// A server that never answers must not keep the caller past its wait.
	giveUp := time.AfterFunc(opts.Wait+acquireGrace, cancel)
	first, err := stream.Recv()
	if !giveUp.Stop() || isDeadlineExceeded(err) {
		cancel()
		return nil, fmt.Errorf("%w: %q within %v", ErrNotAcquired, name, opts.Wait)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	grant := first.GetAcquired()
	if grant == nil {
		cancel()
		return nil, fmt.Errorf("holdfast: lock %q: Hold's first event was %T, not acquired", name, first.GetEvent())
	}
	lease := &Lease{
		ctx: ctx, client: client, name: name, token: grant.Token, holdID: grant.HoldId, fencingToken: grant.FencingToken,
		sentAt: sentAt, stream: stream, cancel: cancel, done: make(chan struct{}), readerDone: make(chan struct{}),
	}
	lease.confirm(grant.LeaseStartedAfterMs, grant.TtlMs, "the grant")
	if err := lease.Err(); err != nil {
		cancel() // frees the hold at once if the server still keeps it and can hear us
		return nil, err
	}
	go lease.read()
	return lease, nil
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

// confirm moves the deadline forward to what a grant or renewal vouches for; a confirmation
// whose deadline has already passed ends the lease.
func (l *Lease) confirm(leaseStartedAfterMs, ttlMs int64, what string) {
	deadline := LeaseDeadline(l.sentAt, time.Duration(leaseStartedAfterMs)*time.Millisecond, time.Duration(ttlMs)*time.Millisecond)
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

func (l *Lease) read() {
	defer close(l.readerDone)
	for {
		event, err := l.stream.Recv()
		if err != nil {
			l.streamEnded(err)
			return
		}
		if renewed := event.GetRenewed(); renewed != nil {
			l.confirm(renewed.LeaseStartedAfterMs, renewed.TtlMs, "a renewal")
		} else if lost := event.GetLost(); lost != nil {
			l.end(&LostError{Name: l.name, Reason: lost.Reason, Code: lost.Code})
		}
	}
}

func (l *Lease) streamEnded(err error) {
	l.mu.Lock()
	releasing := l.releasing
	l.mu.Unlock()
	if releasing {
		return
	}
	if l.ctx.Err() != nil {
		l.end(l.ctx.Err())
		return
	}
	reason := "the Hold stream ended"
	if err != io.EOF {
		reason = fmt.Sprintf("the Hold stream ended: %v", err)
	}
	l.end(&LostError{Name: l.name, Reason: reason})
}

// end records why the lease ended (the first reason wins) and closes Done.
func (l *Lease) end(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	l.err = err
	if l.timer != nil {
		l.timer.Stop()
	}
	close(l.done)
}

// Release gives back exactly this stream's hold (Release with the token and hold id), then ends
// the stream. It returns the loss error when the lease had been lost before (the work done under
// it may not have been exclusive).
func (l *Lease) Release() error {
	lostErr := l.Err() // a deadline that has passed counts as a loss here too
	l.mu.Lock()
	already, held := l.releasing, lostErr == nil
	l.releasing = true
	l.mu.Unlock()
	if already {
		return nil
	}
	var err error
	if held {
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		_, err = l.client.Release(ctx, &holdfastv1.ReleaseRequest{Name: l.name, Token: l.token, HoldId: l.holdID})
		cancel()
	}
	l.cancel() // frees the hold on a live connection if Release did not get through
	<-l.readerDone
	l.end(ErrReleased)
	if !held {
		return lostErr
	}
	return err
}
