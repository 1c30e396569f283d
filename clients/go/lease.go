// Package holdfast is the Go client of the holdfast lock server: Hold keeps a lock through the
// Hold stream and reports, on Done, the moment the lease can no longer be trusted.
//
// The generated stubs are in holdfast/clients/go/gen/holdfast/v1.
package holdfast

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	holdfastv1 "holdfast/clients/go/gen/holdfast/v1"
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
	// SafetyMargin is how long before the last known expiry the lease counts as lost when no
	// renewal has been confirmed; 0 means SafetyMargin(ttl), the server's own margin.
	SafetyMargin time.Duration
}

// ErrNotAcquired is returned by Hold when the lock was not granted within Options.Wait.
var ErrNotAcquired = errors.New("holdfast: lock not acquired in time")

// ErrReleased is Lease.Err after Release.
var ErrReleased = errors.New("holdfast: lease released")

// LostError says why a lease was lost. Code is LOST_REASON_UNSPECIFIED when the client decided
// alone (its local deadline passed, or the stream broke without a lost event).
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

// SafetyMargin is the server watchdog's margin for a lease of ttl: a tenth, between 5 ms and 1 s.
func SafetyMargin(ttl time.Duration) time.Duration {
	margin := ttl / 10
	if margin < 5*time.Millisecond {
		return 5 * time.Millisecond
	}
	if margin > time.Second {
		return time.Second
	}
	return margin
}

// Lease is one grant kept alive by an open Hold stream.
type Lease struct {
	ctx          context.Context
	client       holdfastv1.LockServiceClient
	name         string
	token        string
	fencingToken uint64
	ttl          time.Duration
	margin       time.Duration
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
	stream, err := client.Hold(streamCtx, &holdfastv1.HoldRequest{
		Name: name, Owner: opts.Owner, TtlMs: opts.TTL.Milliseconds(), WaitTimeoutMs: opts.Wait.Milliseconds(),
		Mode: mode, Limit: opts.Limit, MaxHoldMs: opts.MaxHold.Milliseconds(),
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
		ctx: ctx, client: client, name: name, token: grant.Token, fencingToken: grant.FencingToken,
		ttl: time.Duration(grant.TtlMs) * time.Millisecond, margin: opts.SafetyMargin,
		stream: stream, cancel: cancel, done: make(chan struct{}), readerDone: make(chan struct{}),
	}
	if lease.margin == 0 {
		lease.margin = SafetyMargin(lease.ttl)
	}
	lease.confirm(grant.TtlMs)
	go lease.read()
	return lease, nil
}

// Name is the lock's name.
func (l *Lease) Name() string { return l.name }

// Token is the grant's secret token (it works with Release and Renew).
func (l *Lease) Token() string { return l.token }

// FencingToken is the grant's fencing token: pass it to whatever the lock protects.
func (l *Lease) FencingToken() uint64 { return l.fencingToken }

// Done is closed when the lease ends: lost, released, or its context ended.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err is nil while the lease is held, then a *LostError, ErrReleased, or the context's error.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Deadline is the local time after which the lease counts as lost unless a renewal arrives.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// confirm moves the local deadline to now + ttlLeft - margin and arms the timer for it.
func (l *Lease) confirm(ttlLeftMs int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	l.deadline = time.Now().Add(time.Duration(ttlLeftMs)*time.Millisecond - l.margin)
	if l.timer == nil {
		l.timer = time.AfterFunc(time.Until(l.deadline), l.checkDeadline)
	} else {
		l.timer.Reset(time.Until(l.deadline))
	}
}

func (l *Lease) checkDeadline() {
	l.mu.Lock()
	left := time.Until(l.deadline)
	if left > 0 && l.err == nil { // a renewal raced the timer
		l.timer.Reset(left)
	}
	l.mu.Unlock()
	if left <= 0 {
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
			l.confirm(renewed.TtlMs)
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

// Release gives the lock back with its token and ends the stream. It returns the loss error
// when the lease had been lost before (the work done under it may not have been exclusive).
func (l *Lease) Release() error {
	l.mu.Lock()
	already, held := l.releasing, l.err == nil
	l.releasing = true
	lostErr := l.err
	l.mu.Unlock()
	if already {
		return nil
	}
	var err error
	if held {
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		_, err = l.client.Release(ctx, &holdfastv1.ReleaseRequest{Name: l.name, Token: l.token})
		cancel()
	}
	l.cancel() // releases on the server too if Release did not get through
	<-l.readerDone
	l.end(ErrReleased)
	if !held {
		return lostErr
	}
	return err
}
