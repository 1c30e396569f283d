package holdfast

// Hold: one lock kept by a Hold stream of its own.

import (
	"context"
	"fmt"
	"io"
	"time"

	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

// holdStream keeps one lease through its own Hold stream.
type holdStream struct {
	ctx        context.Context
	lease      *Lease
	sentAt     time.Time // every lease time of the stream counts from here
	stream     holdfastv1.LockService_HoldClient
	cancel     context.CancelFunc
	readerDone chan struct{}
}

// Hold acquires name through the Hold stream and keeps it until Release, ctx's end, or loss.
// It returns ErrNotAcquired when the lock is not granted within opts.Wait, and a *DeadlockError
// when the server ended the wait to break a deadlock.
func Hold(ctx context.Context, client holdfastv1.LockServiceClient, name string, opts Options) (*Lease, error) {
	streamCtx, cancel := context.WithCancel(ctx)
	sentAt := time.Now() // the lease's anchor: no later than the request leaves
	stream, err := client.Hold(streamCtx, holdRequest(name, opts))
	if err != nil {
		cancel()
		return nil, err
	}
	// A server that never answers must not keep the caller past its wait.
	giveUp := time.AfterFunc(opts.Wait+acquireGrace, cancel)
	first, err := stream.Recv()
	if !giveUp.Stop() || isDeadlineExceeded(err) {
		cancel()
		return nil, notAcquired(name, opts)
	}
	if err != nil {
		err = deadlockOr(err, stream.Trailer(), name)
		cancel()
		return nil, err
	}
	grant := first.GetAcquired()
	if grant == nil {
		cancel()
		return nil, fmt.Errorf("holdfast: lock %q: Hold's first event was %T, not acquired", name, first.GetEvent())
	}
	h := &holdStream{ctx: ctx, sentAt: sentAt, stream: stream, cancel: cancel, readerDone: make(chan struct{})}
	h.lease = newLease(client, name, grant, h)
	h.confirm(grant.LeaseStartedAfterMs, grant.TtlMs, "the grant")
	if err := h.lease.Err(); err != nil {
		cancel() // frees the hold at once if the server still keeps it and can hear us
		return nil, err
	}
	go h.read()
	return h.lease, nil
}

func (h *holdStream) confirm(leaseStartedAfterMs, ttlMs int64, what string) {
	h.lease.confirmDeadline(LeaseDeadline(h.sentAt, time.Duration(leaseStartedAfterMs)*time.Millisecond, time.Duration(ttlMs)*time.Millisecond), what)
}

func (h *holdStream) read() {
	defer close(h.readerDone)
	for {
		event, err := h.stream.Recv()
		if err != nil {
			h.streamEnded(err)
			return
		}
		if renewed := event.GetRenewed(); renewed != nil {
			h.lease.renewedFence(renewed.SignedFences)
			h.confirm(renewed.LeaseStartedAfterMs, renewed.TtlMs, "a renewal")
		} else if lost := event.GetLost(); lost != nil {
			h.lease.end(&LostError{Name: h.lease.name, Reason: lost.Reason, Code: lost.Code})
		}
	}
}

func (h *holdStream) streamEnded(err error) {
	if h.lease.isReleasing() {
		return
	}
	if h.ctx.Err() != nil {
		h.lease.end(h.ctx.Err())
		return
	}
	reason := "the Hold stream ended"
	if err != io.EOF {
		reason = fmt.Sprintf("the Hold stream ended: %v", err)
	}
	h.lease.end(&LostError{Name: h.lease.name, Reason: reason})
}

// lost leaves the stream open: Release ends it, as it always did.
func (h *holdStream) lost(*Lease) {}

// giveBack releases exactly this stream's hold when it is held, then ends the stream.
func (h *holdStream) giveBack(l *Lease, held bool) error {
	var err error
	if held {
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		_, err = l.client.Release(ctx, &holdfastv1.ReleaseRequest{Name: l.name, Token: l.token, HoldId: l.holdID})
		cancel()
	}
	h.cancel() // frees the hold on a live connection if Release did not get through
	<-h.readerDone
	return err
}
