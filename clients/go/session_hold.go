package holdfast

// Locks held under a session: the same Lease as Hold's, kept by the session's one stream.

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

// holdAsk is what the reader needs to build a hold's lease.
type holdAsk struct {
	ctx  context.Context
	name string
}

// sessionHold keeps one lease under a session; opID is the hold's.
type sessionHold struct {
	session *Session
	opID    uint64
	lease   *Lease
}

// Hold acquires name under the session and keeps it until Lease.Release, ctx's end (the hold is
// given back), the session's end, or loss. The lease is the one Hold returns, with the session's
// deadline: counted from the session's anchors and moved by its renewed messages. It returns
// ErrNotAcquired when the lock is not granted within opts.Wait, a *DeadlockError when the server
// ended the wait to break a deadlock (with no opts.Owner the session is the owner), and the unary
// Hold's error for a bad request.
func (s *Session) Hold(ctx context.Context, name string, opts Options) (*Lease, error) {
	op := &pendingOp{lockName: name, hold: &holdAsk{ctx: ctx, name: name}}
	r := s.do(ctx, &holdfastv1.SessionRequest{Op: &holdfastv1.SessionRequest_Hold{Hold: holdRequest(name, opts)}}, op, opts.Wait)
	if status.Code(r.err) == codes.DeadlineExceeded && !errors.As(r.err, new(*SessionEndedError)) {
		return nil, notAcquired(name, opts)
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.lease == nil {
		return nil, errors.New("holdfast: the session answered hold with something else")
	}
	if err := r.lease.Err(); err != nil { // granted too late: given back
		_ = r.lease.Release()
		return nil, err
	}
	if ctx.Err() != nil { // the caller gave up as the grant came
		_ = r.lease.Release()
		return nil, ctx.Err()
	}
	return r.lease, nil
}

// keep registers the lease of a granted hold (s.mu held).
func (s *Session) keep(opID uint64, ask *holdAsk, grant *holdfastv1.HoldAcquired) *sessionHold {
	held := &sessionHold{session: s, opID: opID}
	held.lease = newLease(s.client, ask.name, grant, held)
	s.holds[opID] = held
	if done := ask.ctx.Done(); done != nil {
		go held.endWith(ask.ctx)
	}
	return held
}

// endWith gives the hold back when ctx ends first, as a cancelled Hold stream would be.
func (h *sessionHold) endWith(ctx context.Context) {
	select {
	case <-ctx.Done():
		if h.session.forget(h.opID) != nil {
			go h.session.releaseQuietly(h.releaseRequest())
		}
		h.lease.end(ctx.Err())
	case <-h.lease.done:
	}
}

func (h *sessionHold) releaseRequest() *holdfastv1.ReleaseRequest {
	return &holdfastv1.ReleaseRequest{Name: h.lease.name, Token: h.lease.token, HoldId: h.lease.holdID}
}

// lost gives back a hold whose lease this side found lost (its deadline passed, or a grant or
// renewal came too late) while the session still keeps it: nobody counts on it any more.
func (h *sessionHold) lost(*Lease) {
	if h.session.forget(h.opID) != nil {
		go h.session.releaseQuietly(h.releaseRequest())
	}
}

// giveBack releases exactly this hold over the session (waiting for the answer when it was held);
// forgotten first, so that the server's `lost` (RELEASED) that follows is not taken for a loss.
func (h *sessionHold) giveBack(_ *Lease, held bool) error {
	if h.session.forget(h.opID) == nil {
		return nil // the session no longer keeps it: it ended, or reported the hold lost
	}
	if !held {
		go h.session.releaseQuietly(h.releaseRequest())
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_, err := h.session.Release(ctx, h.releaseRequest())
	if errors.Is(err, ErrSessionClosed) {
		return nil // Close frees every lock of the session
	}
	return err
}
