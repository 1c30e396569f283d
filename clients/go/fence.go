package holdfast

import (
	"context"
	"net/http"

	"github.com/holdfast/holdfast/clients/go/fencing"
)

// FenceHeader puts this lease's fence (lock name and fencing token) on an outgoing HTTP request's
// headers, for a resource guarded by fencing.Guard: req.Header is typical.
func (l *Lease) FenceHeader(h http.Header) {
	fencing.SetHeader(h, l.name, l.fencingToken)
}

// FenceContext returns ctx carrying this lease's fence in its outgoing gRPC metadata, for a
// resource guarded by fencing.Guard's interceptors.
func (l *Lease) FenceContext(ctx context.Context) context.Context {
	return fencing.OutgoingContext(ctx, l.name, l.fencingToken)
}
