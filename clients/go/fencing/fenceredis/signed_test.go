package fenceredis

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast/holdfast/clients/go/fencing"
	"github.com/holdfast/holdfast/clients/go/fencing/internal/fencetest"
)

func TestSignedRefusalsNeverReachTheRedisStore(t *testing.T) {
	fencetest.RefusalsBeforeStore(t, startRedis(t, durable...).store(t, Options{}))
}

func TestSignedKleppmannRedisStore(t *testing.T) {
	fencetest.Kleppmann(t, startRedis(t, durable...).store(t, Options{}))
}

// Negative control: without keys, a forged token takes the resource over.
func TestForgerTakesOverAnUnsignedGuardRedisStore(t *testing.T) {
	fencetest.ForgerTakesOverAnUnsignedGuard(t, startRedis(t, durable...).store(t, Options{}))
}

// The store's redis-server SIGKILLed by PID: 503 / UNAVAILABLE at once, saying so in words.
func TestRedisKilledAnswersUnavailable(t *testing.T) {
	r := startRedis(t, durable...)
	message := fencetest.UnavailableWithinBound(t, r.store(t, Options{}), r.kill)
	if !strings.Contains(message, "its Redis refuses connections") && !strings.Contains(message, "its Redis closed the connection") {
		t.Fatalf("the message does not say what happened: %q", message)
	}
}

// The store's redis-server stopped (SIGSTOP: it accepts nothing and answers nothing): 503 at the
// bound, naming it and its option.
func TestRedisStoppedAnswersUnavailableWithinTheBound(t *testing.T) {
	r := startRedis(t, durable...)
	message := fencetest.UnavailableWithinBound(t, r.store(t, Options{}), func() { r.signal(t, syscall.SIGSTOP) })
	if !strings.Contains(message, "its Redis did not answer within 1s (fenceredis Options.Timeout)") {
		t.Fatalf("the message does not name the bound: %q", message)
	}
}

// Negative control of the bound: with a 4 s Timeout the same stopped Redis keeps a check waiting
// at least 4 s, so the 1 s answer above is the bound's work, not a fast failure.
func TestRedisStoppedWaitsForTheTimeoutGiven(t *testing.T) {
	r := startRedis(t, durable...)
	store := r.store(t, Options{Timeout: 4 * time.Second})
	if _, err := store.Check(context.Background(), fencetest.RandomLock(t), 1); err != nil {
		t.Fatal(err)
	}
	r.signal(t, syscall.SIGSTOP)
	started := time.Now()
	_, err := store.Check(context.Background(), fencetest.RandomLock(t), 2)
	var unavailable *fencing.UnavailableError
	if took := time.Since(started); !asUnavailable(err, &unavailable) || took < 4*time.Second {
		t.Fatalf("a check on a stopped Redis with a 4 s timeout: %v after %v", err, took)
	}
	if !strings.Contains(unavailable.Cause, "within 4s") {
		t.Fatalf("cause %q", unavailable.Cause)
	}
}
