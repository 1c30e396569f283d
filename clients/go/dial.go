package holdfast

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
)

// DefaultDialTimeout bounds Dial when its context has no deadline.
const DefaultDialTimeout = 10 * time.Second

// DialError says why Dial could not reach a holdfast server, in words: Addr is the address
// given, Cause what is wrong there and what to change.
type DialError struct {
	Addr  string
	Cause string
	Err   error // the underlying error, when there is one
}

func (e *DialError) Error() string {
	return fmt.Sprintf("holdfast: cannot connect to %s: %s", e.Addr, e.Cause)
}

func (e *DialError) Unwrap() error { return e.Err }

// Dial connects to the holdfast server at addr (host:port) with s's security and waits until it
// answers, at most until ctx ends (DefaultDialTimeout when ctx has no deadline). When it cannot
// connect, the *DialError says why: an address without a port or with a scheme, nothing listening,
// an HTTP/1 listener (holdfast's --http-listen port), TLS on one side only, a certificate this
// client does not trust, or a client certificate the server refused. extra are added to the
// options DialOptions(s) gives.
func Dial(ctx context.Context, addr string, s Security, extra ...grpc.DialOption) (*grpc.ClientConn, error) {
	if err := checkAddress(addr); err != nil {
		return nil, err
	}
	opts, err := DialOptions(s)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultDialTimeout)
		defer cancel()
	}
	conn, err := grpc.DialContext(ctx, addr, append(opts, extra...)...)
	if err != nil {
		return nil, &DialError{Addr: addr, Cause: err.Error(), Err: err}
	}
	for {
		state := conn.GetState()
		if state == connectivity.Ready {
			return conn, nil
		}
		if state == connectivity.TransientFailure {
			// A server that is only starting up is waited for; a misconfiguration is told at once.
			if cause := diagnose(ctx, addr, s); cause != nil {
				conn.Close()
				return nil, cause
			}
		}
		if !conn.WaitForStateChange(ctx, state) {
			conn.Close()
			if cause := diagnose(context.Background(), addr, s); cause != nil {
				return nil, cause
			}
			return nil, &DialError{Addr: addr, Cause: "no gRPC answer before the timeout (" + ctx.Err().Error() + ")", Err: ctx.Err()}
		}
	}
}

// resolverSchemes are grpc-go target schemes Dial passes through unchecked.
var resolverSchemes = map[string]bool{"dns": true, "unix": true, "unix-abstract": true, "passthrough": true}

// checkAddress refuses the address shapes grpc-go would only fail on later with its own words.
func checkAddress(addr string) error {
	if i := strings.Index(addr, "://"); i > 0 {
		scheme := strings.ToLower(addr[:i])
		if resolverSchemes[scheme] {
			return nil
		}
		hostPort := addr[i+3:]
		if u, err := url.Parse(addr); err == nil {
			hostPort = u.Host
		}
		advice := ""
		if scheme == "https" || scheme == "grpcs" {
			advice = ", and set Security.TLS (or Security.CA)"
		}
		return &DialError{Addr: addr, Cause: fmt.Sprintf("the address has a scheme (%s://): give host:port only, e.g. %s%s", scheme, hostPort, advice)}
	}
	if strings.HasPrefix(addr, "unix:") {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return &DialError{Addr: addr, Cause: fmt.Sprintf("the address has no port: give host:port, e.g. %s:50051", strings.Trim(addr, "[]")), Err: err}
		}
		return &DialError{Addr: addr, Cause: "the address is not host:port: " + strings.TrimPrefix(err.Error(), "address "+addr+": "), Err: err}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return &DialError{Addr: addr, Cause: fmt.Sprintf("the port %q is not a number from 1 to 65535", port)}
	}
	return nil
}
