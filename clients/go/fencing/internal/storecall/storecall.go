// Package storecall is what the fence stores share to fail closed in bounded time: a call that
// returns at its deadline whether or not the driver does, and the cause of a failure in words.
package storecall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// Bounded runs call with a context that ends after timeout and returns at that moment even when
// call has not (a driver that ignores its context then finishes in the background).
func Bounded[T any](ctx context.Context, timeout time.Duration, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		value T
		err   error
	}
	done := make(chan result, 1)
	go func() {
		value, err := call(ctx)
		done <- result{value, err}
	}()
	select {
	case r := <-done:
		return r.value, r.err
	case <-ctx.Done():
		select {
		case r := <-done: // answered at the deadline after all
			return r.value, r.err
		default:
			var zero T
			return zero, ctx.Err()
		}
	}
}

// Cause says in words why a call to backend (e.g. "its Redis") failed; timeout and option name
// the bound when there is one (option: the setting that changes it).
func Cause(err error, backend string, timeout time.Duration, option string) string {
	var netErr net.Error
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		if timeout > 0 {
			return fmt.Sprintf("%s did not answer within %v (%s)", backend, timeout, option)
		}
		return backend + " did not answer in time"
	case errors.Is(err, context.Canceled):
		return "the request was cancelled before " + backend + " answered"
	case errors.Is(err, syscall.ECONNREFUSED):
		return backend + " refuses connections (is it running?)"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed):
		return backend + " closed the connection"
	case errors.As(err, &dnsErr):
		return "the host name of " + backend + " does not resolve"
	default:
		return backend + " answered with an error"
	}
}
