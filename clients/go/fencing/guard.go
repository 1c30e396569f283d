package fencing

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Guard refuses requests whose fence is stale (HTTP 409 / gRPC FAILED_PRECONDITION), missing or
// malformed (HTTP 400 / gRPC INVALID_ARGUMENT), and records the newest token in Store:
//
//	guard := fencing.Guard{Store: store}
//	http.ListenAndServe(addr, guard.HTTP(handler))
//	grpc.NewServer(grpc.UnaryInterceptor(guard.Unary), grpc.StreamInterceptor(guard.Stream))
//
// The accepted fence is in the request's context (FenceFrom). A store that fails answers HTTP 503
// / gRPC UNAVAILABLE; OnStoreError, when set, hears why.
type Guard struct {
	Store        Store
	OnStoreError func(error)
	// Unguarded, when set, names gRPC methods the interceptors let through without a fence
	// (e.g. "/grpc.health.v1.Health/Check"); for HTTP, guard only the handlers that need it.
	Unguarded func(fullMethod string) bool
}

// admit reads and checks a fence; the error is a *BadFenceError, a *StaleError or the store's.
func (g Guard) admit(ctx context.Context, f Fence, err error) (context.Context, error) {
	if err != nil {
		return ctx, err
	}
	if err := check(ctx, g.Store, f); err != nil {
		var stale *StaleError
		if !errors.As(err, &stale) && g.OnStoreError != nil {
			g.OnStoreError(err)
		}
		return ctx, err
	}
	return WithFence(ctx, f), nil
}

// HTTP wraps next with the guard.
func (g Guard) HTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := FromHeader(r.Header)
		ctx, err := g.admit(r.Context(), f, err)
		if err != nil {
			status, body := httpRefusal(err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(body)
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// httpRefusal is the status and JSON body of fencing.json's refusal for err.
func httpRefusal(err error) (int, map[string]string) {
	var bad *BadFenceError
	var stale *StaleError
	switch {
	case errors.As(err, &bad):
		return http.StatusBadRequest, map[string]string{"error": bad.Kind + "_fence", "field": bad.Field, "header": bad.Header, "message": bad.Error()}
	case errors.As(err, &stale):
		return http.StatusConflict, map[string]string{"error": "stale_fencing_token", "lock": stale.Lock,
			"token": FormatToken(stale.Token), "newest": FormatToken(stale.Newest), "message": stale.Error()}
	default:
		return http.StatusServiceUnavailable, map[string]string{"error": "fence_store_unavailable", "message": "the fencing store could not be reached"}
	}
}

// Unary is a grpc.UnaryServerInterceptor that guards every unary call.
func (g Guard) Unary(ctx context.Context, req interface{}, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (interface{}, error) {
	if g.Unguarded != nil && g.Unguarded(info.FullMethod) {
		return handler(ctx, req)
	}
	ctx, err := g.admitCall(ctx)
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
	ctx, err := g.admitCall(ss.Context())
	if err != nil {
		return err
	}
	return handler(srv, &fencedStream{ServerStream: ss, ctx: ctx})
}

func (g Guard) admitCall(ctx context.Context) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f, err := FromMetadata(md)
	ctx, err = g.admit(ctx, f, err)
	if err == nil {
		return ctx, nil
	}
	var bad *BadFenceError
	var stale *StaleError
	switch {
	case errors.As(err, &bad):
		return ctx, status.Error(codes.InvalidArgument, bad.Error())
	case errors.As(err, &stale):
		return ctx, status.Error(codes.FailedPrecondition, stale.Error())
	default:
		return ctx, status.Error(codes.Unavailable, "the fencing store could not be reached")
	}
}

type fencedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *fencedStream) Context() context.Context { return s.ctx }
