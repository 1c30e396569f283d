package holdfast

// Session: one Session stream (docs/sessions.md) that carries many operations, each with an op_id
// this client picks, answered in any order; locks held under it are renewed together, with one
// `renewed` message per tick for the whole session.
//
// A Session is one stream. Once it has ended (Close, its context, the server, or a cut-off found
// by the ping) it stays ended: every later operation fails with a *SessionEndedError, and the
// application opens a new Session. Every lease held under it ends with it: released after Close,
// the context's error after the context ended, a *LostError otherwise (the server keeps a vanished
// session's locks only until the leases it reported run out).

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

// DefaultCallTimeout is SessionOptions.CallTimeout when it is 0.
const DefaultCallTimeout = 10 * time.Second

// sessionPingInterval is how often a session that holds locks pings (a variable: tests lower it).
var sessionPingInterval = time.Minute

// SessionOptions shape one session. The zero value is fine.
type SessionOptions struct {
	// CallTimeout bounds the wait for each operation's answer (plus the operation's own Wait), for
	// a ping's pong (one not answered in time means the connection is cut off: the session ends
	// and every lease under it is lost at once) and for Close. 0 means DefaultCallTimeout.
	CallTimeout time.Duration
}

// SessionStats counts what a session has received.
type SessionStats struct {
	// Renewed is how many `renewed` messages arrived: one per renewal tick for all the locks.
	Renewed uint64
	// Pongs is how many pings were answered.
	Pongs uint64
	// Holds is how many locks the session holds now.
	Holds int
}

// Session carries lock operations and holds many locks over one stream; see OpenSession.
type Session struct {
	ctx     context.Context // the caller's: its end ends the session
	client  holdfastv1.LockServiceClient
	addr    string // for errors
	timeout time.Duration
	stream  holdfastv1.LockService_SessionClient
	cancel  context.CancelFunc
	done    chan struct{} // closed once the stream has ended and everything under it is told

	sendMu sync.Mutex // a gRPC stream takes one Send at a time

	mu      sync.Mutex
	nextOp  uint64
	pending map[uint64]*pendingOp
	holds   map[uint64]*sessionHold // by the op_id of the hold that took each lock
	anchors sessionAnchors
	stats   SessionStats
	closing bool
	ended   *SessionEndedError // why it ended; nil while open
}

// OpenSession opens a session on conn (a *grpc.ClientConn, e.g. from Dial). It lives until
// Close, ctx's end, or the stream's end; cancelling ctx cancels the stream, which frees every lock
// held under it at once on a live connection, and ends those leases with ctx's error.
func OpenSession(ctx context.Context, conn grpc.ClientConnInterface, opts SessionOptions) (*Session, error) {
	if opts.CallTimeout < 0 {
		return nil, fmt.Errorf("holdfast: SessionOptions.CallTimeout is %v: give a positive duration, or 0 for %v", opts.CallTimeout, DefaultCallTimeout)
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	addr := "the server"
	if named, ok := conn.(interface{ Target() string }); ok {
		addr = named.Target()
	}
	client := holdfastv1.NewLockServiceClient(conn)
	streamCtx, cancel := context.WithCancel(ctx)
	openedAt := time.Now() // every lease time of the session counts from no earlier than this
	stream, err := client.Session(streamCtx)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &Session{
		ctx: ctx, client: client, addr: addr, timeout: opts.CallTimeout, stream: stream, cancel: cancel,
		done: make(chan struct{}), pending: map[uint64]*pendingOp{}, holds: map[uint64]*sessionHold{},
		anchors: newSessionAnchors(openedAt),
	}
	go s.read()
	go s.pingWhileHolding(sessionPingInterval) // read here, where tests set it
	return s, nil
}

// Done is closed when the session has ended; Err then says why.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is nil while the session is open, then a *SessionEndedError.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended == nil {
		return nil
	}
	return s.ended
}

// Stats counts the renewed messages and pongs received, and the locks held now.
func (s *Session) Stats() SessionStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	stats := s.stats
	stats.Holds = len(s.holds)
	return stats
}

// Close ends the session cleanly: operations in flight are answered (waits included), then the
// server releases every lock held under it at once; its leases end with ErrReleased. It waits for
// the stream's end at most the call timeout; then it cancels the stream (which frees the locks
// too, on a live connection; otherwise they run out) and returns an error.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.ended != nil || s.closing {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.closing = true
	s.nextOp++
	opID := s.nextOp
	s.mu.Unlock()
	s.sendMu.Lock()
	_ = s.stream.Send(&holdfastv1.SessionRequest{OpId: opID, Op: &holdfastv1.SessionRequest_Close{Close: &holdfastv1.SessionClose{}}})
	_ = s.stream.CloseSend()
	s.sendMu.Unlock()
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case <-s.done:
		return nil
	case <-timer.C:
	}
	err := fmt.Errorf("holdfast: the session with holdfast at %s did not end within %v of Close: cancelled", s.addr, s.timeout)
	s.cutOff(err.Error())
	<-s.done
	return err
}

// cutOff ends the session from this side: its stream is cancelled and every lease under it is
// lost with this cause.
func (s *Session) cutOff(cause string) {
	s.mu.Lock()
	if s.ended == nil {
		s.ended = &SessionEndedError{Addr: s.addr, Cause: cause, Code: codes.Unavailable}
	}
	s.mu.Unlock()
	s.cancel()
}

func (s *Session) read() {
	for {
		response, err := s.stream.Recv()
		if err != nil {
			s.streamEnded(err)
			return
		}
		switch result := response.Result.(type) {
		case *holdfastv1.SessionResponse_Renewed:
			s.renewed(result.Renewed)
		case *holdfastv1.SessionResponse_Lost:
			if held := s.forget(response.OpId); held != nil {
				held.lease.end(&LostError{Name: held.lease.name, Reason: result.Lost.Reason, Code: result.Lost.Code})
			}
		default:
			s.answered(response)
		}
	}
}

// renewed moves every lease the session held when the message was sent to its deadline: they are
// all the leases registered so far, as the reader registers each grant before reading on.
func (s *Session) renewed(renewed *holdfastv1.SessionRenewed) {
	s.mu.Lock()
	s.stats.Renewed++
	deadline := s.anchors.deadline(renewed.LeaseStartedAfterMs, renewed.TtlMs)
	leases := make([]*Lease, 0, len(s.holds))
	for _, held := range s.holds {
		leases = append(leases, held.lease)
	}
	s.mu.Unlock()
	for _, lease := range leases {
		lease.confirmDeadline(deadline, "a renewal")
	}
}

// forget stops keeping the hold taken by op opID; nil when the session no longer keeps it.
func (s *Session) forget(opID uint64) *sessionHold {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.holds[opID]
	delete(s.holds, opID)
	return held
}

// streamEnded tells every operation in flight and every lease held why the session ended.
func (s *Session) streamEnded(err error) {
	s.mu.Lock()
	if s.ended == nil {
		s.ended = s.endedBy(err)
	}
	ended, closed := s.ended, s.closing // after Close nobody counts on the leases: released
	pending, holds := s.pending, s.holds
	s.pending, s.holds = map[uint64]*pendingOp{}, map[uint64]*sessionHold{}
	s.mu.Unlock()
	s.cancel()
	inFlight := *ended
	inFlight.InFlight = true
	for _, op := range pending {
		op.settle(opResult{err: &inFlight})
	}
	for _, held := range holds {
		switch {
		case closed:
			held.lease.end(ErrReleased)
		case s.ctx.Err() != nil:
			held.lease.end(s.ctx.Err())
		default:
			held.lease.end(&LostError{Name: held.lease.name, Reason: ended.lossReason()})
		}
	}
	close(s.done)
}

// endedBy says why the stream ended, from its end status.
func (s *Session) endedBy(err error) *SessionEndedError {
	switch {
	case s.closing && err == io.EOF:
		return &SessionEndedError{Addr: s.addr, Cause: "it was closed", Code: codes.Unavailable, Err: ErrSessionClosed}
	case s.ctx.Err() != nil:
		return &SessionEndedError{Addr: s.addr, Cause: "its context ended: " + s.ctx.Err().Error(), Code: status.FromContextError(s.ctx.Err()).Code(), Err: s.ctx.Err()}
	case err == io.EOF:
		return &SessionEndedError{Addr: s.addr, Cause: "the server ended the stream", Code: codes.Unavailable}
	}
	st := status.Convert(err)
	return &SessionEndedError{Addr: s.addr, Cause: fmt.Sprintf("%s: %s", st.Code(), st.Message()), Code: st.Code(), Err: err}
}
