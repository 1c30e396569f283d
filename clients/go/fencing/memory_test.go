package fencing_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/holdfast/holdfast/clients/go/fencing"
	"github.com/holdfast/holdfast/clients/go/fencing/internal/fencetest"
)

func TestMemoryStoreDecides(t *testing.T) {
	fencetest.RunDecideCases(t, &fencing.MemoryStore{})
}

func TestMemoryStoreIsAtomicUnderConcurrency(t *testing.T) {
	store := &fencing.MemoryStore{}
	for i := 0; i < 5; i++ {
		if err := fencetest.Concurrent(context.Background(), store, fencetest.RandomLock(t), 300, 16); err != nil {
			t.Fatal(err)
		}
	}
}

// racyStore reads, pauses, then writes: the checker must catch it (negative control).
type racyStore struct {
	mu     sync.Mutex
	newest map[string]uint64
}

func (s *racyStore) Check(_ context.Context, lock string, token uint64) (fencing.Decision, error) {
	s.mu.Lock()
	newest, seen := s.newest[lock]
	s.mu.Unlock()
	time.Sleep(time.Millisecond) // widens the window a non-atomic store has anyway
	if seen && token < newest {
		return fencing.Decision{Newest: newest}, nil
	}
	s.mu.Lock()
	s.newest[lock] = token
	s.mu.Unlock()
	return fencing.Decision{Accepted: true, Newest: token}, nil
}

func TestConcurrencyCheckerCatchesANonAtomicStore(t *testing.T) {
	if fencetest.Concurrent(context.Background(), &racyStore{newest: map[string]uint64{}}, "racy", 300, 16) == nil {
		t.Fatal("the checker passed a store that reads and writes in two steps")
	}
}

// refusesEqualStore refuses a holder writing again with its own token (negative control).
type refusesEqualStore struct{ newest map[string]uint64 }

func (s *refusesEqualStore) Check(_ context.Context, lock string, token uint64) (fencing.Decision, error) {
	if newest, seen := s.newest[lock]; seen && token <= newest {
		return fencing.Decision{Newest: newest}, nil
	}
	s.newest[lock] = token
	return fencing.Decision{Accepted: true, Newest: token}, nil
}

func TestDecideCasesCatchAStoreThatRefusesEqualTokens(t *testing.T) {
	failures := fencetest.DecideFailures(t, &refusesEqualStore{newest: map[string]uint64{}})
	if len(failures) != 1 || !strings.Contains(failures[0], "the same token") {
		t.Fatalf("the decide cases did not catch (only) a store that refuses an equal token: %q", failures)
	}
}
