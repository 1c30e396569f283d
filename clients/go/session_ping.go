package holdfast

// The session's ping: it re-anchors the leases' deadlines (session_deadline.go) and finds a
// connection cut off without an error (a dead peer, a black-holed network).

import (
	"fmt"
	"time"

	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

// pingWhileHolding pings every interval while the session holds locks.
func (s *Session) pingWhileHolding(interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-ticker.C:
			if s.Stats().Holds > 0 {
				s.ping()
			}
		}
	}
}

// ping sends one ping and waits for its pong (the reader adds the anchor); none within the call
// timeout cuts the session off.
func (s *Session) ping() {
	op := &pendingOp{pingSent: time.Now()} // no later than the ping leaves
	if _, err := s.start(&holdfastv1.SessionRequest{Op: &holdfastv1.SessionRequest_Ping{Ping: &holdfastv1.SessionPing{}}}, op); err != nil {
		return // the session has ended
	}
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case <-op.result:
	case <-timer.C:
		s.cutOff(fmt.Sprintf("no pong within %v: the connection is cut off", s.timeout))
	}
}
