package postgrestest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast/holdfast/clients/go/fencing"
	"github.com/holdfast/holdfast/clients/go/fencing/internal/fencetest"
)

func TestSignedRefusalsNeverReachThePostgresStore(t *testing.T) {
	fencetest.RefusalsBeforeStore(t, newPostgresStore(t, sharedPostgresDB(t)))
}

func TestSignedKleppmannPostgresStore(t *testing.T) {
	fencetest.Kleppmann(t, newPostgresStore(t, sharedPostgresDB(t)))
}

// Negative control: without keys, a forged token takes the resource over.
func TestForgerTakesOverAnUnsignedGuardPostgresStore(t *testing.T) {
	fencetest.ForgerTakesOverAnUnsignedGuard(t, newPostgresStore(t, sharedPostgresDB(t)))
}

// The store's PostgreSQL SIGKILLed by PID (the postmaster and every backend): 503 / UNAVAILABLE
// at once, saying so in words.
func TestPostgresKilledAnswersUnavailable(t *testing.T) {
	p := startPostgres(t)
	defer p.stop()
	message := fencetest.UnavailableWithinBound(t, newPostgresStore(t, p.open(t)), func() { p.signalAll(t, syscall.SIGKILL) })
	if !strings.Contains(message, "its PostgreSQL") {
		t.Fatalf("the message does not say what happened: %q", message)
	}
}

// The store's PostgreSQL stopped (SIGSTOP to all its processes): 503 at the bound, naming it.
// Then the negative control of the bound: with a 4 s Timeout the same stopped PostgreSQL keeps a
// check waiting at least 4 s, so the 1 s answer is the bound's work, not a fast failure.
func TestPostgresStoppedAnswersUnavailableWithinTheBound(t *testing.T) {
	p := startPostgres(t)
	defer p.stop()
	defer p.signalAll(t, syscall.SIGCONT) // before the stop: a stopped backend would hold the shutdown
	db := p.open(t)
	message := fencetest.UnavailableWithinBound(t, newPostgresStore(t, db), func() { p.signalAll(t, syscall.SIGSTOP) })
	if !strings.Contains(message, "its PostgreSQL did not answer within 1s (PostgresStore.Timeout)") {
		t.Fatalf("the message does not name the bound: %q", message)
	}
	started := time.Now()
	_, err := (&fencing.PostgresStore{DB: db, Timeout: 4 * time.Second}).Check(context.Background(), fencetest.RandomLock(t), 2)
	var unavailable *fencing.UnavailableError
	if took := time.Since(started); !errors.As(err, &unavailable) || took < 4*time.Second || !strings.Contains(unavailable.Cause, "within 4s") {
		t.Fatalf("a check on the stopped PostgreSQL with a 4 s timeout: %v after %v", err, took)
	}
}

// signalAll sends sig to the postmaster (by the PID in its data dir) and to every process it
// started, so that no backend of an open connection answers either.
func (p *postgres) signalAll(t *testing.T, sig syscall.Signal) {
	raw, err := os.ReadFile(filepath.Join(p.dir, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	postmaster, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, stat := range stats {
		raw, err := os.ReadFile(stat)
		if err != nil {
			continue // it ended meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
		fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(postmaster) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
			_ = syscall.Kill(pid, sig)
		}
	}
	if err := syscall.Kill(postmaster, sig); err != nil && sig != syscall.SIGCONT {
		t.Fatal(err)
	}
}
