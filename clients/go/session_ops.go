package holdfast

// A session's operations: each is sent with an op_id of its own and waits for the answer with
// that op_id, so many are in flight at once.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

// ErrSessionClosed is the Err of a *SessionEndedError for a session ended by Close.
var ErrSessionClosed = errors.New("holdfast: session closed")

// SessionEndedError is an operation's error when its session has ended. InFlight says the
// operation was sent before the end and not answered: it may or may not have taken effect. It
// carries a gRPC status (status.Code(err) is Code), as a unary call's error does.
type SessionEndedError struct {
	Addr     string
	Cause    string
	Code     codes.Code
	InFlight bool
	Err      error // the stream's error, the context's, or ErrSessionClosed
}

func (e *SessionEndedError) Error() string {
	if e.InFlight {
		return fmt.Sprintf("holdfast: the session with holdfast at %s ended before this operation was answered (%s); it may or may not have taken effect", e.Addr, e.Cause)
	}
	return fmt.Sprintf("holdfast: the session with holdfast at %s has ended (%s): open a new session", e.Addr, e.Cause)
}

// lossReason is the LostError reason of a lease held under the ended session.
func (e *SessionEndedError) lossReason() string {
	return fmt.Sprintf("the session with holdfast at %s ended (%s)", e.Addr, e.Cause)
}

func (e *SessionEndedError) Unwrap() error { return e.Err }

// GRPCStatus lets status.Code and status.Convert read the error as a call's.
func (e *SessionEndedError) GRPCStatus() *status.Status { return status.New(e.Code, e.Error()) }

// opResult is an operation's outcome: the answer, and for a hold the lease the reader built.
type opResult struct {
	response *holdfastv1.SessionResponse
	lease    *Lease
	err      error
}

// pendingOp is one operation in flight.
type pendingOp struct {
	result    chan opResult // buffered: the reader never waits on a caller
	abandoned bool          // the caller gave up: an answer that grants a lock is given back
	lockName  string        // an acquire's or hold's, to give back an unwanted grant
	hold      *holdAsk      // set for a hold: the reader builds its lease
	pingSent  time.Time     // set for a ping: the anchor's time
}

func (op *pendingOp) settle(r opResult) { op.result <- r }

// start registers op under a new op_id and sends it; a session that has ended refuses it.
func (s *Session) start(request *holdfastv1.SessionRequest, op *pendingOp) (uint64, error) {
	op.result = make(chan opResult, 1)
	s.mu.Lock()
	if s.ended != nil || s.closing {
		s.mu.Unlock()
		if err := s.Err(); err != nil {
			return 0, err
		}
		return 0, &SessionEndedError{Addr: s.addr, Cause: "it is closing", Code: codes.Unavailable, Err: ErrSessionClosed}
	}
	s.nextOp++
	opID := s.nextOp
	s.pending[opID] = op
	s.mu.Unlock()
	request.OpId = opID
	s.send(request) // a send that fails ends the stream: the reader then fails the op
	return opID, nil
}

func (s *Session) send(request *holdfastv1.SessionRequest) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	_ = s.stream.Send(request)
}

// do runs one operation: its answer, the server's OpError as the unary call's error, ctx's error
// (the operation is cancelled), or DeadlineExceeded after the call timeout plus wait.
func (s *Session) do(ctx context.Context, request *holdfastv1.SessionRequest, op *pendingOp, wait time.Duration) opResult {
	if err := ctx.Err(); err != nil {
		return opResult{err: err}
	}
	opID, err := s.start(request, op)
	if err != nil {
		return opResult{err: err}
	}
	timer := time.NewTimer(s.timeout + wait)
	defer timer.Stop()
	var gaveUp error
	select {
	case r := <-op.result:
		return withOpError(r, op)
	case <-ctx.Done():
		gaveUp = ctx.Err()
	case <-timer.C:
		gaveUp = status.Errorf(codes.DeadlineExceeded, "holdfast: no answer from the session with holdfast at %s within %v", s.addr, s.timeout+wait)
	}
	if !s.abandon(opID, op) {
		return withOpError(<-op.result, op) // answered meanwhile: the answer is on its way
	}
	return opResult{err: gaveUp}
}

// abandon marks an operation given up on and sends its cancel; false when it was answered first.
func (s *Session) abandon(opID uint64, op *pendingOp) bool {
	s.mu.Lock()
	inFlight := s.pending[opID] == op
	if inFlight {
		op.abandoned = true
		s.nextOp++
	}
	cancelID := s.nextOp
	s.mu.Unlock()
	if inFlight {
		s.send(&holdfastv1.SessionRequest{OpId: cancelID, Op: &holdfastv1.SessionRequest_Cancel{Cancel: opID}})
	}
	return inFlight
}

// withOpError turns the server's OpError into the error the unary call would have returned (a
// *DeadlockError for a deadlock: an OpError has no metadata, its message tells).
func withOpError(r opResult, op *pendingOp) opResult {
	if opErr := r.response.GetError(); opErr != nil {
		return opResult{err: deadlockOr(status.Error(codes.Code(opErr.Code), opErr.Message), nil, op.lockName)}
	}
	return r
}

// answered hands an answer to its operation (a pong adds an anchor; a hold's lease is built and
// registered here, before the next message is read, so that every later renewal covers it).
func (s *Session) answered(response *holdfastv1.SessionResponse) {
	s.mu.Lock()
	op := s.pending[response.OpId]
	delete(s.pending, response.OpId)
	if op == nil {
		s.mu.Unlock()
		return
	}
	if pong := response.GetPong(); pong != nil {
		s.stats.Pongs++
		s.anchors.addPong(op.pingSent, pong.ReceivedAfterMs)
	}
	var held *sessionHold
	if grant := response.GetHold(); grant != nil && !op.abandoned && op.hold != nil {
		held = s.keep(response.OpId, op.hold, grant)
	}
	s.mu.Unlock()
	if op.abandoned {
		s.giveBackUnwanted(op.lockName, response)
		return
	}
	r := opResult{response: response}
	if held != nil {
		r.lease = held.lease
		grant := response.GetHold()
		held.lease.confirmDeadline(s.deadlineOf(grant.LeaseStartedAfterMs, grant.TtlMs), "the grant")
	}
	op.settle(r)
}

func (s *Session) deadlineOf(leaseStartedAfterMs, ttlMs int64) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.anchors.deadline(leaseStartedAfterMs, ttlMs)
}

// giveBackUnwanted releases a grant that came after its caller gave up (the answer crossed the
// cancel): nobody else would.
func (s *Session) giveBackUnwanted(name string, response *holdfastv1.SessionResponse) {
	release := &holdfastv1.ReleaseRequest{Name: name}
	if grant := response.GetHold(); grant != nil {
		release.Token, release.HoldId = grant.Token, grant.HoldId
	} else if grant := response.GetAcquire(); grant != nil && grant.Acquired {
		release.Token = grant.Token
	} else {
		return
	}
	go s.releaseQuietly(release)
}

// releaseQuietly gives back a lock nobody waits on; its outcome has nobody to tell.
func (s *Session) releaseQuietly(release *holdfastv1.ReleaseRequest) {
	s.do(context.Background(), &holdfastv1.SessionRequest{Op: &holdfastv1.SessionRequest_Release{Release: release}}, &pendingOp{}, 0)
}

// Acquire runs the Acquire RPC over the session (a grant with its own lease, which outlives the
// session like any Acquire's); its wait_timeout_ms is added to the call timeout. A wait the
// server ended to break a deadlock returns a *DeadlockError.
func (s *Session) Acquire(ctx context.Context, request *holdfastv1.AcquireRequest) (*holdfastv1.AcquireResponse, error) {
	return call(s, ctx, &holdfastv1.SessionRequest{Op: &holdfastv1.SessionRequest_Acquire{Acquire: request}}, &pendingOp{lockName: request.Name},
		time.Duration(request.WaitTimeoutMs)*time.Millisecond, (*holdfastv1.SessionResponse).GetAcquire, "acquire")
}

// Release runs the Release RPC over the session. A lease held under this session is given back
// with Lease.Release instead.
func (s *Session) Release(ctx context.Context, request *holdfastv1.ReleaseRequest) (*holdfastv1.ReleaseResponse, error) {
	return call(s, ctx, &holdfastv1.SessionRequest{Op: &holdfastv1.SessionRequest_Release{Release: request}}, &pendingOp{}, 0,
		(*holdfastv1.SessionResponse).GetRelease, "release")
}

// Renew runs the Renew RPC over the session.
func (s *Session) Renew(ctx context.Context, request *holdfastv1.RenewRequest) (*holdfastv1.RenewResponse, error) {
	return call(s, ctx, &holdfastv1.SessionRequest{Op: &holdfastv1.SessionRequest_Renew{Renew: request}}, &pendingOp{}, 0,
		(*holdfastv1.SessionResponse).GetRenew, "renew")
}

// Inspect runs the Inspect RPC over the session.
func (s *Session) Inspect(ctx context.Context, request *holdfastv1.InspectRequest) (*holdfastv1.InspectResponse, error) {
	return call(s, ctx, &holdfastv1.SessionRequest{Op: &holdfastv1.SessionRequest_Inspect{Inspect: request}}, &pendingOp{}, 0,
		(*holdfastv1.SessionResponse).GetInspect, "inspect")
}

// call runs one operation and takes its answer of the kind asked for; an answer of another kind (a
// server bug) is an error rather than a nil.
func call[T any](s *Session, ctx context.Context, request *holdfastv1.SessionRequest, op *pendingOp, wait time.Duration,
	answer func(*holdfastv1.SessionResponse) *T, kind string) (*T, error) {
	r := s.do(ctx, request, op, wait)
	if r.err != nil {
		return nil, r.err
	}
	if got := answer(r.response); got != nil {
		return got, nil
	}
	return nil, fmt.Errorf("holdfast: the session answered %s with something else", kind)
}
