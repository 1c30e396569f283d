package holdfast

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/holdfast/holdfast/clients/go/internal/testrepo"
)

const electionTTL = 1500 * time.Millisecond

// nextLeader waits for the first non-nil leader on leaders, or fails after timeout.
func nextLeader(t *testing.T, leaders <-chan *Leader, timeout time.Duration) *Leader {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case leader, ok := <-leaders:
			if !ok {
				t.Fatal("Observe closed its channel")
			}
			if leader != nil {
				return leader
			}
		case <-deadline:
			t.Fatalf("no leader within %v", timeout)
		}
	}
}

func TestCampaignResignHandsOverAtOnce(t *testing.T) {
	client, _ := sharedServer(t)
	name := randomName(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leaders := Observe(ctx, client, name)
	if first := <-leaders; first != nil {
		t.Fatalf("a fresh lock has leader %v", first)
	}
	first, err := Campaign(ctx, client, name, "first:1", Options{TTL: electionTTL})
	if err != nil {
		t.Fatal(err)
	}
	if seen := nextLeader(t, leaders, 5*time.Second); seen.Value != "first:1" || seen.FencingToken != first.FencingToken() {
		t.Fatalf("observed %+v, want first:1 with fencing token %d", seen, first.FencingToken())
	}
	if err := first.Proclaim(ctx, "first:2"); err != nil {
		t.Fatal(err)
	}
	if seen := nextLeader(t, leaders, 5*time.Second); seen.Value != "first:2" {
		t.Fatalf("observed %+v after Proclaim", seen)
	}
	won := make(chan *Leadership, 1)
	go func() {
		second, err := Campaign(ctx, client, name, "second", Options{TTL: electionTTL})
		if err != nil {
			t.Error(err)
		}
		won <- second
	}()
	waitUntil(t, "the second candidate to queue", func() bool { return holders(t, client, name).Waiters == 1 })
	resignedAt := time.Now()
	if err := first.Resign(); err != nil {
		t.Fatal(err)
	}
	second := <-won
	defer second.Resign()
	if took := time.Since(resignedAt); took >= electionTTL {
		t.Fatalf("the next leader took %v after a resign: the lock was left to run out", took)
	}
	if second.FencingToken() <= first.FencingToken() {
		t.Fatalf("fencing token %d after %d", second.FencingToken(), first.FencingToken())
	}
	if seen := nextLeader(t, leaders, 5*time.Second); seen.Value != "second" {
		t.Fatalf("observed %+v", seen)
	}
}

func TestCampaignReplacesKilledLeaderWithinItsTTL(t *testing.T) {
	client, addr := sharedServerAddr(t)
	name := randomName(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leaders := Observe(ctx, client, name)
	// The leader to kill: a Hold in its own process (test/support/hold-child.js).
	child := exec.Command("node", filepath.Join(testrepo.Root(t), "test", "support", "hold-child.js"), addr, name, strconv.Itoa(int(electionTTL.Milliseconds())))
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	killedToken, _ := strconv.ParseUint(regexp.MustCompile(`"fencingToken":"(\d+)"`).FindStringSubmatch(line)[1], 10, 64)
	if seen := nextLeader(t, leaders, 5*time.Second); seen.FencingToken != killedToken {
		t.Fatalf("observed %+v, want the child's fencing token %d", seen, killedToken)
	}
	won := make(chan *Leadership, 1)
	go func() {
		next, err := Campaign(ctx, client, name, "next", Options{TTL: electionTTL})
		if err != nil {
			t.Error(err)
		}
		won <- next
	}()
	killedAt := time.Now()
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	margin := 3 * time.Second
	select {
	case next := <-won:
		defer next.Resign()
		if next.FencingToken() <= killedToken {
			t.Fatalf("fencing token %d after %d", next.FencingToken(), killedToken)
		}
	case <-time.After(electionTTL + margin):
		t.Fatalf("no new leader within the ttl plus %v", margin)
	}
	if seen := nextLeader(t, leaders, margin); seen.Value != "next" {
		t.Fatalf("observed %+v", seen)
	}
	t.Logf("new leader %v after the SIGKILL (ttl %v)", time.Since(killedAt), electionTTL)
}
