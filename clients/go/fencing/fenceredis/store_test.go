package fenceredis

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/holdfast/holdfast/clients/go/fencing"
	"github.com/holdfast/holdfast/clients/go/fencing/internal/fencetest"
	"github.com/holdfast/holdfast/clients/go/internal/testrepo"
)

func TestScriptIsTheConformanceCopy(t *testing.T) {
	shared, err := os.ReadFile(filepath.Join(testrepo.Root(t), "clients", "conformance", "fence-record-1.lua"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal([]byte(recordScript), shared) {
		t.Fatal("fence-record-1.lua differs from clients/conformance/fence-record-1.lua: copy it again")
	}
}

func TestStoreDecides(t *testing.T) {
	fencetest.RunDecideCases(t, startRedis(t, durable...).store(t, Options{}))
}

func TestStoreIsAtomicUnderConcurrency(t *testing.T) {
	store := startRedis(t, durable...).store(t, Options{})
	for i := 0; i < 3; i++ {
		if err := fencetest.Concurrent(context.Background(), store, fencetest.RandomLock(t), 300, 16); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRecordKeepsForKeepAndRefreshes(t *testing.T) {
	r := startRedis(t, durable...)
	keep := time.Hour
	store, lock := r.store(t, Options{Keep: keep}), fencetest.RandomLock(t)
	if _, err := store.Check(context.Background(), lock, 3); err != nil {
		t.Fatal(err)
	}
	r.do(t, "PEXPIRE", Key(lock), 1000)
	if _, err := store.Check(context.Background(), lock, 3); err != nil {
		t.Fatal(err)
	}
	ttl, _ := redis.Int64(r.do(t, "PTTL", Key(lock)), nil)
	if ttl <= 1000 || ttl > keep.Milliseconds() {
		t.Fatalf("PTTL %d ms after an accepted request, want the full keep (%d ms)", ttl, keep.Milliseconds())
	}
	if tagged := Key(lock); !strings.HasPrefix(tagged, "holdfast-fence:{") || !strings.HasSuffix(tagged, "}") {
		t.Fatalf("key %q has no hash tag", tagged)
	}
}

func TestNewRefusesALossyRedis(t *testing.T) {
	cases := map[string]struct {
		args  []string
		words []string
	}{
		"appendonly no":        {[]string{"--appendonly", "no"}, []string{"appendonly no", "AllowLossyRedis"}},
		"appendfsync everysec": {[]string{"--appendonly", "yes", "--appendfsync", "everysec"}, []string{"appendfsync everysec", "AllowLossyRedis"}},
		"CONFIG disabled":      {append(durable, "--rename-command", "CONFIG", ""), []string{"CONFIG", "disabled", "AllowLossyRedis"}},
	}
	for what, c := range cases {
		r := startRedis(t, c.args...)
		_, err := New(context.Background(), r.pool(), Options{})
		if err == nil {
			t.Fatalf("%s: accepted", what)
		}
		for _, w := range c.words {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", what, err, w)
			}
		}
		if _, err := New(context.Background(), r.pool(), Options{AllowLossyRedis: true}); err != nil {
			t.Errorf("%s with AllowLossyRedis: %v", what, err)
		}
	}
	if _, err := New(context.Background(), startRedis(t, durable...).pool(), Options{}); err != nil {
		t.Fatalf("a durable Redis is refused: %v", err)
	}
}

// newestAfterKill records 5 then 9, SIGKILLs the Redis, restarts it on the same dir, and returns
// what the store then says of the stale token 8.
func newestAfterKill(t *testing.T, args []string, opts Options) fencing.Decision {
	r := startRedis(t, args...)
	lock := fencetest.RandomLock(t)
	store := r.store(t, opts)
	for _, token := range []uint64{5, 9} {
		if d, err := store.Check(context.Background(), lock, token); err != nil || !d.Accepted {
			t.Fatalf("token %d: %+v, %v", token, d, err)
		}
	}
	r.kill()
	r.start(t)
	d, err := r.store(t, opts).Check(context.Background(), lock, 8)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDurableRedisKeepsTheNewestThroughSIGKILL(t *testing.T) {
	if d := newestAfterKill(t, durable, Options{}); d.Accepted || d.Newest != 9 {
		t.Fatalf("after SIGKILL and restart, token 8: %+v, want refused with newest 9", d)
	}
}

// Negative control: the same crash on a Redis without the append-only file lets token 8 through.
func TestLossyRedisForgetsThroughSIGKILL(t *testing.T) {
	if d := newestAfterKill(t, []string{"--appendonly", "no"}, Options{AllowLossyRedis: true}); !d.Accepted {
		t.Fatalf("a Redis without the append-only file kept the record through SIGKILL: %+v", d)
	}
}
