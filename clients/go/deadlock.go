package holdfast

// Deadlocks (docs/deadlocks.md): the one rule that tells a wait the server ended to break a
// deadlock from any other ABORTED (clients/conformance/deadlock.json), and the error it becomes.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// ErrDeadlock matches every *DeadlockError with errors.Is.
var ErrDeadlock = errors.New("holdfast: deadlock")

const (
	// deadlockReasonKey and deadlockReason are the trailing metadata of a unary call or stream
	// ended by a deadlock; a session operation's error has none, and its message starts with
	// deadlockPrefix.
	deadlockReasonKey = "holdfast-reason"
	deadlockReason    = "deadlock"
	deadlockPrefix    = "deadlock: "
)

// DeadlockError is a call's error when the server ended its wait to break a deadlock: give back
// what you hold, pause a short random while, and try again. errors.Is(err, ErrDeadlock) matches it,
// and status.Code(err) is still codes.Aborted.
type DeadlockError struct {
	// Lock is the lock the call waited for ("" when the SDK cannot tell: a lock set's call).
	Lock string
	// Message is the server's message, unchanged: the cycle in words (each lock, its holder's
	// owner, what that owner waits for).
	Message string
}

func (e *DeadlockError) Error() string {
	if e.Lock == "" {
		return "holdfast: " + e.Message
	}
	return fmt.Sprintf("holdfast: lock %q: %s", e.Lock, e.Message)
}

// Is makes errors.Is(err, ErrDeadlock) true.
func (e *DeadlockError) Is(target error) bool { return target == ErrDeadlock }

// GRPCStatus lets status.Code and status.Convert read it as the call's ABORTED status.
func (e *DeadlockError) GRPCStatus() *status.Status { return status.New(codes.Aborted, e.Message) }

// isDeadlock is the rule: ABORTED, and the trailer's holdfast-reason is exactly "deadlock" or the
// message starts with "deadlock: ". A lost lease is ABORTED too, and is not one.
func isDeadlock(code codes.Code, trailer metadata.MD, message string) bool {
	if code != codes.Aborted {
		return false
	}
	return slices.Contains(trailer.Get(deadlockReasonKey), deadlockReason) || strings.HasPrefix(message, deadlockPrefix)
}

// deadlockOr is err as a *DeadlockError naming lock when isDeadlock says so (trailer: the call's
// trailing metadata, nil for a session operation's error), else err unchanged.
func deadlockOr(err error, trailer metadata.MD, lock string) error {
	if err == nil || errors.Is(err, ErrDeadlock) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok || !isDeadlock(st.Code(), trailer, st.Message()) {
		return err
	}
	return &DeadlockError{Lock: lock, Message: st.Message()}
}

// lockOf is a request's lock name, when it names one lock.
func lockOf(request any) string {
	if named, ok := request.(interface{ GetName() string }); ok {
		return named.GetName()
	}
	return ""
}

// deadlockUnary is the unary client interceptor Dial and DialOptions install: a deadlock's status
// from Acquire, AcquireSet or any other unary call becomes a *DeadlockError.
func deadlockUnary(ctx context.Context, method string, request, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var trailer metadata.MD
	err := invoker(ctx, method, request, reply, cc, append(opts, grpc.Trailer(&trailer))...)
	return deadlockOr(err, trailer, lockOf(request))
}

// deadlockStreams is the stream client interceptor Dial and DialOptions install: a server stream
// (Hold, HoldSet) ended by a deadlock fails its Recv with a *DeadlockError. A Session stream is
// left alone: its operations' errors are classified one by one.
func deadlockStreams(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	stream, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || desc.ClientStreams {
		return stream, err
	}
	return &deadlockStream{ClientStream: stream}, nil
}

// deadlockStream remembers the lock its one request names (sent before any Recv).
type deadlockStream struct {
	grpc.ClientStream
	lock string
}

func (s *deadlockStream) SendMsg(m any) error {
	s.lock = lockOf(m)
	return s.ClientStream.SendMsg(m)
}

func (s *deadlockStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil || err == io.EOF {
		return err
	}
	return deadlockOr(err, s.Trailer(), s.lock)
}
