package fencing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// DefaultNamespace is the namespace a guard expects when Guard.Namespace is empty.
const DefaultNamespace = "default"

// Guard admits a request only with a fence holdfast issued for the lock of the resource it
// touches, not older than the newest seen for that lock, and records it in Store:
//
//	keys, err := fencing.FetchKeys(ctx, "http://holdfast.internal:9090/fence-keys")
//	guard := fencing.Guard{Store: store, Keys: keys, Lock: "orders"}
//	http.ListenAndServe(addr, guard.HTTP(handler))
//	grpc.NewServer(grpc.UnaryInterceptor(guard.Unary), grpc.StreamInterceptor(guard.Stream))
//
// It checks in the order of clients/conformance/signed-fence.md and stops at the first refusal;
// only the last step asks Store:
//  1. a fence header sent twice, none at all, a signed fence breaking its format, unsigned
//     headers disagreeing with it: HTTP 400 / INVALID_ARGUMENT (a *BadFenceError);
//  2. only the unsigned pair while Keys is set and AcceptUnsigned is not: 403 signed_fence_required;
//  3. to 6. a key not in Keys, a bad signature, another namespace, another lock: 403 /
//     PERMISSION_DENIED (a *RefusedError);
//  7. with LeaseEndCheck, a signed lease end past by more than LeaseEndSkew: 409 fence_lease_ended;
//  8. a token older than the newest: 409 / FAILED_PRECONDITION (a *StaleError); a store that
//     cannot answer: 503 / UNAVAILABLE (an *UnavailableError).
//
// Every request and every gRPC method is guarded unless UnguardedRequest or Unguarded says
// otherwise. The admitted fence is in the handler's context (FromContext).
type Guard struct {
	Store Store
	// Keys verifies signed fences (ParseKeys, LoadKeysFile, FetchKeys). With Keys, a request
	// needs a fence signed by one of them unless AcceptUnsigned; without, the guard reads only
	// the unsigned pair (as before signed fences).
	Keys           *KeyRing
	AcceptUnsigned bool
	// Namespace is the holdfast namespace of the resource's lock (DefaultNamespace when empty).
	Namespace string
	// The lock that protects the resource a request touches: Lock for all of them, or HTTPLock /
	// GRPCLock from the request. Required with Keys (a signed fence is checked against it);
	// without Keys, unsigned fences are checked against it when one is given. A rule that
	// returns "" refuses the request (HTTP 500 / INTERNAL): a guard that cannot tell the lock
	// fails closed.
	Lock     string
	HTTPLock func(r *http.Request) string
	GRPCLock func(fullMethod string, md metadata.MD) string
	// LeaseEndCheck refuses a signed fence whose stated lease end is more than LeaseEndSkew in
	// the past by this process's clock, even when no newer holder has written yet. It assumes
	// the guard's clock and the holdfast server's differ by less than LeaseEndSkew. Off unless set.
	LeaseEndCheck bool
	LeaseEndSkew  time.Duration
	// Now is the guard's clock for LeaseEndCheck (time.Now when nil).
	Now func() time.Time
	// OnStoreError, when set, hears why the store could not answer (the driver's error wrapped).
	OnStoreError func(error)
	// UnguardedRequest and Unguarded let requests and gRPC methods through without a fence
	// (e.g. a health check); every one is guarded when they are nil.
	UnguardedRequest func(r *http.Request) bool
	Unguarded        func(fullMethod string) bool
}

// wire names where a fence travels.
type wire struct{ fence, lock, token string }

var (
	httpWire = wire{HeaderFence, HeaderLock, HeaderToken}
	grpcWire = wire{MetadataFence, MetadataLock, MetadataToken}
)

// misconfiguredError is a guard that cannot tell the resource's lock: it refuses (HTTP 500).
type misconfiguredError struct{ why string }

func (e *misconfiguredError) Error() string { return "fencing.Guard: " + e.why }

// read is steps 1 and 2: the fence of a request whose headers (or metadata) values gives.
func (g Guard) read(values func(string) []string, names wire) (Fence, *signedFence, error) {
	signed, lock, token := values(names.fence), values(names.lock), values(names.token)
	for _, h := range []struct {
		values        []string
		field, header string
	}{{signed, "fence", names.fence}, {lock, "lock", names.lock}, {token, "token", names.token}} {
		if len(h.values) > 1 {
			return Fence{}, nil, &BadFenceError{Kind: "malformed", Field: h.field, Header: h.header, Reason: "is given more than once"}
		}
	}
	if g.Keys == nil {
		f, err := parse(lock, token, names.lock, names.token)
		return f, nil, err
	}
	if len(signed) == 0 {
		if len(lock) == 0 && len(token) == 0 {
			return Fence{}, nil, &BadFenceError{Kind: "missing", Field: "fence", Header: names.fence}
		}
		f, err := parse(lock, token, names.lock, names.token)
		if err == nil && !g.AcceptUnsigned {
			err = refused("signed_fence_required", fmt.Sprintf("this resource requires a signed fence (header %s)", names.fence), "header", names.fence)
		}
		return f, nil, err
	}
	s, why := parseSigned(signed[0])
	if why != "" {
		return Fence{}, nil, &BadFenceError{Kind: "malformed", Field: "fence", Header: names.fence, Reason: why}
	}
	if len(lock) == 1 {
		if name, bad := decodeName(lock[0]); bad != "" || name != s.fence.Lock {
			return Fence{}, nil, &BadFenceError{Kind: "malformed", Field: "lock", Header: names.lock, Reason: "does not name the lock of " + names.fence}
		}
	}
	if len(token) == 1 {
		if n, ok := parseDecimal(token[0]); !ok || n != s.fence.Token {
			return Fence{}, nil, &BadFenceError{Kind: "malformed", Field: "token", Header: names.token, Reason: "is not the token of " + names.fence}
		}
	}
	return s.fence, &s, nil
}

// admit runs every step for one request: lockOf gives the resource's lock ("" when the guard has
// no rule for it). It returns the context carrying the admitted fence.
func (g Guard) admit(ctx context.Context, values func(string) []string, names wire, lockOf func() string) (context.Context, error) {
	f, signed, err := g.read(values, names)
	if err != nil {
		return ctx, err
	}
	if signed != nil {
		if err := g.Keys.verify(*signed); err != nil {
			return ctx, err
		}
		if expected := g.namespace(); f.Namespace != expected {
			return ctx, refused("fence_for_another_namespace",
				fmt.Sprintf("fence for namespace %q refused: this resource is protected in namespace %q", f.Namespace, expected),
				"namespace", f.Namespace, "expected", expected)
		}
	}
	if expected := lockOf(); expected != "" && f.Lock != expected {
		return ctx, refused("fence_for_another_lock",
			fmt.Sprintf("fence for lock %q refused: this resource is protected by lock %q", f.Lock, expected),
			"lock", f.Lock, "expected", expected)
	} else if expected == "" && (g.Keys != nil || g.Lock != "" || g.HTTPLock != nil || g.GRPCLock != nil) {
		return ctx, &misconfiguredError{"its Lock, HTTPLock or GRPCLock gave no lock for this request, so no fence can be checked against it"}
	}
	if err := g.checkLeaseEnd(f); err != nil {
		return ctx, err
	}
	if err := check(ctx, g.Store, f); err != nil {
		var stale *StaleError
		if errors.As(err, &stale) {
			return ctx, err
		}
		if g.OnStoreError != nil {
			g.OnStoreError(err)
		}
		var unavailable *UnavailableError
		if !errors.As(err, &unavailable) {
			unavailable = &UnavailableError{Lock: f.Lock, Cause: "the store answered with an error", Err: err}
		}
		return ctx, unavailable
	}
	return WithFence(ctx, f), nil
}

func (g Guard) namespace() string {
	if g.Namespace == "" {
		return DefaultNamespace
	}
	return g.Namespace
}

// checkLeaseEnd is step 7.
func (g Guard) checkLeaseEnd(f Fence) error {
	if !g.LeaseEndCheck || !f.Signed || !f.HasLeaseEnd {
		return nil
	}
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	nowMs, skewMs := uint64(now().UnixMilli()), uint64(g.LeaseEndSkew.Milliseconds())
	if f.LeaseEndMs > ^uint64(0)-skewMs || nowMs <= f.LeaseEndMs+skewMs {
		return nil
	}
	end, nowText, skew := FormatToken(f.LeaseEndMs), FormatToken(nowMs), FormatToken(skewMs)
	return refused("fence_lease_ended",
		fmt.Sprintf("fence for lock %q (token %d) refused: its lease ended at %s, now is %s (skew allowance %s ms)", f.Lock, f.Token, end, nowText, skew),
		"lock", f.Lock, "token", FormatToken(f.Token), "lease_end_ms", end, "now_ms", nowText, "skew_ms", skew)
}

// HTTP wraps next with the guard. It panics when the guard has Keys but no Lock or HTTPLock, as
// http.Handle does for a handler that cannot work.
func (g Guard) HTTP(next http.Handler) http.Handler {
	if g.Keys != nil && g.Lock == "" && g.HTTPLock == nil {
		panic("fencing.Guard: Keys is set but neither Lock nor HTTPLock names the resource's lock: a signed fence must be checked against it")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.UnguardedRequest != nil && g.UnguardedRequest(r) {
			next.ServeHTTP(w, r)
			return
		}
		lockOf := func() string {
			if g.HTTPLock != nil {
				return g.HTTPLock(r)
			}
			return g.Lock
		}
		ctx, err := g.admit(r.Context(), func(name string) []string { return r.Header.Values(name) }, httpWire, lockOf)
		if err != nil {
			status, _, body := refusal(err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(body)
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// refusal is the HTTP status, the gRPC code and the JSON body (its "message" the gRPC status
// message) of the refusal err.
func refusal(err error) (int, codes.Code, map[string]string) {
	var bad *BadFenceError
	var rejected *RefusedError
	var stale *StaleError
	var unavailable *UnavailableError
	switch {
	case errors.As(err, &bad):
		return http.StatusBadRequest, codes.InvalidArgument,
			map[string]string{"error": bad.Kind + "_fence", "field": bad.Field, "header": bad.Header, "message": bad.Error()}
	case errors.As(err, &rejected):
		body := map[string]string{"error": rejected.Code, "message": rejected.Message}
		for k, v := range rejected.Fields {
			body[k] = v
		}
		if rejected.Code == "fence_lease_ended" {
			return http.StatusConflict, codes.FailedPrecondition, body
		}
		return http.StatusForbidden, codes.PermissionDenied, body
	case errors.As(err, &stale):
		return http.StatusConflict, codes.FailedPrecondition, map[string]string{"error": "stale_fencing_token", "lock": stale.Lock,
			"token": FormatToken(stale.Token), "newest": FormatToken(stale.Newest), "message": stale.Error()}
	case errors.As(err, &unavailable):
		return http.StatusServiceUnavailable, codes.Unavailable,
			map[string]string{"error": "fence_store_unavailable", "lock": unavailable.Lock, "message": unavailable.Error()}
	default:
		return http.StatusInternalServerError, codes.Internal, map[string]string{"error": "fence_guard_misconfigured", "message": err.Error()}
	}
}

func grpcRefusal(err error) error {
	_, code, body := refusal(err)
	return status.Error(code, body["message"])
}

// Unary is a grpc.UnaryServerInterceptor that guards every unary call.
func (g Guard) Unary(ctx context.Context, req interface{}, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (interface{}, error) {
	if g.Unguarded != nil && g.Unguarded(info.FullMethod) {
		return handler(ctx, req)
	}
	ctx, err := g.admitCall(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// Stream is a grpc.StreamServerInterceptor that guards every stream once, when it opens.
func (g Guard) Stream(srv interface{}, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if g.Unguarded != nil && g.Unguarded(info.FullMethod) {
		return handler(srv, ss)
	}
	ctx, err := g.admitCall(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return handler(srv, &fencedStream{ServerStream: ss, ctx: ctx})
}

func (g Guard) admitCall(ctx context.Context, fullMethod string) (context.Context, error) {
	if g.Keys != nil && g.Lock == "" && g.GRPCLock == nil {
		return ctx, grpcRefusal(&misconfiguredError{"Keys is set but neither Lock nor GRPCLock names the resource's lock: a signed fence must be checked against it"})
	}
	md, _ := metadata.FromIncomingContext(ctx)
	lockOf := func() string {
		if g.GRPCLock != nil {
			return g.GRPCLock(fullMethod, md)
		}
		return g.Lock
	}
	ctx, err := g.admit(ctx, md.Get, grpcWire, lockOf)
	if err != nil {
		return ctx, grpcRefusal(err)
	}
	return ctx, nil
}

type fencedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *fencedStream) Context() context.Context { return s.ctx }
