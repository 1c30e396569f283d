package fencing

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultStoreTimeout bounds each call of the Redis and PostgreSQL stores unless their Timeout
// says otherwise: a store whose backend does not answer by then answers an *UnavailableError
// (the guard's HTTP 503 / gRPC UNAVAILABLE), failing closed.
const DefaultStoreTimeout = time.Second

// Decision is a store's answer: Accepted when the token is not older than the newest recorded
// for the lock (it is then the newest), and Newest, the newest token after the check.
type Decision struct {
	Accepted bool
	Newest   uint64
}

// Store compares a request's token with the newest one recorded for its lock and records it when
// it is not older, in one atomic step. MemoryStore, PostgresStore and fenceredis.Store implement it.
type Store interface {
	Check(ctx context.Context, lock string, token uint64) (Decision, error)
}

// decide is the rule every store applies: equal is accepted (one holder writing again).
func decide(newest *uint64, token uint64) Decision {
	if newest != nil && token < *newest {
		return Decision{Accepted: false, Newest: *newest}
	}
	return Decision{Accepted: true, Newest: token}
}

// MemoryStore keeps the newest tokens in this process. It forgets them on restart, so it only
// protects a resource whose own state lives in the same process (and is lost with it). The zero
// value is ready to use. It never forgets a lock: one entry per lock name ever seen.
type MemoryStore struct {
	mu     sync.Mutex
	newest map[string]uint64
}

// Check implements Store.
func (s *MemoryStore) Check(_ context.Context, lock string, token uint64) (Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.newest == nil {
		s.newest = map[string]uint64{}
	}
	var newest *uint64
	if n, ok := s.newest[lock]; ok {
		newest = &n
	}
	d := decide(newest, token)
	s.newest[lock] = d.Newest
	return d, nil
}

// UnavailableError is a store that could not answer (the guard's 503 fence_store_unavailable):
// Cause says why in words; Err is the driver's error (errors.Unwrap), for your logs.
type UnavailableError struct {
	Lock  string
	Cause string
	Err   error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("fence store unavailable for lock %q: %s", e.Lock, e.Cause)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// check runs the store and turns a refusal into a *StaleError.
func check(ctx context.Context, store Store, f Fence) error {
	d, err := store.Check(ctx, f.Lock, f.Token)
	if err != nil {
		return err
	}
	if !d.Accepted {
		return &StaleError{Lock: f.Lock, Token: f.Token, Newest: d.Newest}
	}
	return nil
}
