package holdfast

// Leader election on a lock: Campaign holds it through a Hold stream with a published value,
// Observe follows who holds it through Watch. The leader is the lock's exclusive holder; its
// fencing token is greater than every earlier leader's, so downstream services can refuse the
// writes of a deposed leader.

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

// campaignWait is the longest wait one Hold may ask for; Campaign asks again after it.
const campaignWait = 24 * time.Hour

// observeRetry is how long Observe waits before watching again after the stream failed.
const observeRetry = time.Second

// Leader is the holder of an election's lock.
type Leader struct {
	Owner        string
	Value        string
	FencingToken uint64
}

// Leadership is won by Campaign. Done closes when it is or may be lost (Err says why); Resign
// steps down and frees the lock at once.
type Leadership struct {
	*Lease
}

// Proclaim publishes a new value to observers.
func (l *Leadership) Proclaim(ctx context.Context, value string) error {
	return l.SetValue(ctx, value)
}

// Resign steps down: the next candidate is elected at once.
func (l *Leadership) Resign() error {
	return l.Release()
}

// Campaign blocks until this candidate leads name, publishing value, or ctx ends. opts.Wait,
// Shared and Limit are ignored.
func Campaign(ctx context.Context, client holdfastv1.LockServiceClient, name, value string, opts Options) (*Leadership, error) {
	opts.Value, opts.Wait, opts.Shared, opts.Limit = value, campaignWait, false, 0
	for {
		lease, err := Hold(ctx, client, name, opts)
		if err == nil {
			return &Leadership{lease}, nil
		}
		if !errors.Is(err, ErrNotAcquired) || ctx.Err() != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
	}
}

// LeaderOf is the exclusive holder that still holds (hold count > 0), or nil.
func LeaderOf(holders []*holdfastv1.Holder) *Leader {
	for _, h := range holders {
		if h.HoldCount > 0 && h.Mode != holdfastv1.LockMode_LOCK_MODE_SHARED {
			return &Leader{Owner: h.Owner, Value: h.Value, FencingToken: h.FencingToken}
		}
	}
	return nil
}

// Observe sends the leader of name (nil while there is none) now and after every change, until
// ctx ends; then it closes the channel. It watches again when the stream fails (a server restart).
func Observe(ctx context.Context, client holdfastv1.LockServiceClient, name string) <-chan *Leader {
	leaders := make(chan *Leader)
	go func() {
		defer close(leaders)
		var last *Leader
		first := true
		for ctx.Err() == nil {
			stream, err := client.Watch(ctx, &holdfastv1.WatchRequest{Name: name})
			for err == nil {
				var res *holdfastv1.WatchResponse
				if res, err = stream.Recv(); err != nil {
					break
				}
				leader := LeaderOf(res.Holders)
				if !first && sameLeader(last, leader) {
					continue
				}
				first, last = false, leader
				select {
				case leaders <- leader:
				case <-ctx.Done():
					return
				}
			}
			if code := status.Code(err); code == codes.InvalidArgument || code == codes.Unauthenticated || code == codes.PermissionDenied {
				return
			}
			select {
			case <-time.After(observeRetry):
			case <-ctx.Done():
			}
		}
	}()
	return leaders
}

func sameLeader(a, b *Leader) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
