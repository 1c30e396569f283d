package holdfast

import (
	"context"
	"net/http"

	"github.com/holdfast/holdfast/clients/go/fencing"
)

// FenceHeader puts this lease's fence on an outgoing HTTP request's headers, for a resource
// guarded by fencing.Guard (req.Header is typical): its newest signed fence in Holdfast-Fence
// (when the server signs) and the lock name and fencing token in the unsigned pair.
func (l *Lease) FenceHeader(h http.Header) {
	fencing.SetSignedHeader(h, l.name, l.fencingToken, l.SignedFence())
}

// FenceContext returns ctx carrying this lease's fence (as FenceHeader) in its outgoing gRPC
// metadata, for a resource guarded by fencing.Guard's interceptors.
func (l *Lease) FenceContext(ctx context.Context) context.Context {
	return fencing.OutgoingSignedContext(ctx, l.name, l.fencingToken, l.SignedFence())
}
