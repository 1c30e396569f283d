package fencing

import (
	"context"
	"net/http"

	"google.golang.org/grpc/metadata"
)

// SetHeader puts a fence on an outgoing HTTP request's headers (replacing any there).
func SetHeader(h http.Header, lock string, token uint64) {
	h.Set(HeaderLock, EncodeLock(lock))
	h.Set(HeaderToken, FormatToken(token))
}

// FromHeader reads the fence of an incoming HTTP request.
func FromHeader(h http.Header) (Fence, error) {
	return parse(h.Values(HeaderLock), h.Values(HeaderToken), HeaderLock, HeaderToken)
}

// OutgoingContext returns ctx with the fence added to its outgoing gRPC metadata, replacing a
// fence already there (other metadata is kept).
func OutgoingContext(ctx context.Context, lock string, token uint64) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Set(MetadataLock, EncodeLock(lock))
	md.Set(MetadataToken, FormatToken(token))
	return metadata.NewOutgoingContext(ctx, md)
}

// FromMetadata reads the fence of an incoming gRPC call's metadata.
func FromMetadata(md metadata.MD) (Fence, error) {
	return parse(md.Get(MetadataLock), md.Get(MetadataToken), MetadataLock, MetadataToken)
}

type fenceKey struct{}

// WithFence returns ctx carrying the fence a guard accepted; FenceFrom reads it back, so a handler
// can pass the fence on (e.g. to PostgresStore.Fenced, to record it with its own write).
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceFrom is the fence a guard accepted for this request, if any.
func FenceFrom(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok
}
