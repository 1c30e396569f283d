package fencing

import (
	"context"
	"net/http"

	"google.golang.org/grpc/metadata"
)

// SetHeader puts an unsigned fence on an outgoing HTTP request's headers (replacing any fence
// there).
func SetHeader(h http.Header, lock string, token uint64) {
	SetSignedHeader(h, lock, token, "")
}

// SetSignedHeader puts a grant's fence on an outgoing HTTP request's headers, replacing any fence
// there: its signed fence (the grant's SignedFence, e.g. AcquireResponse.SignedFence or a
// SetMember's) in Holdfast-Fence and the unsigned pair beside it, for a guard that predates
// signed fences. An empty signedFence (a server without a signing key) sends the pair alone.
func SetSignedHeader(h http.Header, lock string, token uint64, signedFence string) {
	h.Del(HeaderFence)
	if signedFence != "" {
		h.Set(HeaderFence, signedFence)
	}
	h.Set(HeaderLock, EncodeLock(lock))
	h.Set(HeaderToken, FormatToken(token))
}

// FromHeader reads the unsigned fence of an incoming HTTP request (a Guard reads the signed one).
func FromHeader(h http.Header) (Fence, error) {
	return parse(h.Values(HeaderLock), h.Values(HeaderToken), HeaderLock, HeaderToken)
}

// OutgoingContext returns ctx with an unsigned fence in its outgoing gRPC metadata, replacing a
// fence already there (other metadata is kept).
func OutgoingContext(ctx context.Context, lock string, token uint64) context.Context {
	return OutgoingSignedContext(ctx, lock, token, "")
}

// OutgoingSignedContext is SetSignedHeader for gRPC: ctx with the grant's signed fence and the
// unsigned pair in its outgoing metadata, replacing a fence already there.
func OutgoingSignedContext(ctx context.Context, lock string, token uint64, signedFence string) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	delete(md, MetadataFence)
	if signedFence != "" {
		md.Set(MetadataFence, signedFence)
	}
	md.Set(MetadataLock, EncodeLock(lock))
	md.Set(MetadataToken, FormatToken(token))
	return metadata.NewOutgoingContext(ctx, md)
}

// FromMetadata reads the unsigned fence of an incoming gRPC call's metadata.
func FromMetadata(md metadata.MD) (Fence, error) {
	return parse(md.Get(MetadataLock), md.Get(MetadataToken), MetadataLock, MetadataToken)
}

type fenceKey struct{}

// WithFence returns ctx carrying the fence a guard admitted; FromContext reads it back, so a
// handler can pass the fence on (e.g. to PostgresStore.Fenced, to record it with its own write).
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FromContext is the fence a guard admitted for this request (HTTP: r.Context(); gRPC: the
// handler's ctx or stream.Context()), if any.
func FromContext(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok
}
