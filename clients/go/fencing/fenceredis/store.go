// Package fenceredis is a fencing.Store in the protected resource's own Redis, through redigo:
// the script fence-record-1.lua (a byte-identical copy of clients/conformance/fence-record-1.lua)
// compares and records each lock's newest token in one step, in the key
// `holdfast-fence:{<lock>}` (one hash slot, so it works on a Redis Cluster too).
//
// The store is as durable as its Redis. New refuses a Redis that can lose acknowledged writes
// (it wants appendonly yes and appendfsync always) unless Options.AllowLossyRedis is set.
//
// It fails closed in bounded time: each Check gets its connection and runs the script under a
// context that ends after Options.Timeout (1 s by default; the script runs by DoContext), and
// answers a *fencing.UnavailableError at that moment even if the pool's Dial ignores the
// context. The store takes the pool you built, so it bounds each call rather than setting the
// pool's timeouts (set redis.DialConnectTimeout and redis.DialReadTimeout there too).
package fenceredis

import (
	"context"
	_ "embed" // the script ships inside the package
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/holdfast/holdfast/clients/go/fencing"
	"github.com/holdfast/holdfast/clients/go/fencing/internal/storecall"
)

//go:embed fence-record-1.lua
var recordScript string

var record = redis.NewScript(1, recordScript)

// DefaultKeep is how long a lock's record outlives its last accepted request when Options.Keep is 0.
const DefaultKeep = 30 * 24 * time.Hour

// Options shape a Store.
type Options struct {
	// Keep is how long a lock's record outlives its last accepted request: the longest a stale
	// holder may be paused and still be caught (a request after the record is gone is accepted).
	// It is refreshed on every accepted request. 0 means DefaultKeep.
	Keep time.Duration
	// AllowLossyRedis accepts a Redis that can lose acknowledged writes on a crash (appendonly no,
	// or appendfsync everysec/no), or whose settings cannot be read. It gives up the guarantee
	// that a restart of that Redis never lets a stale token through.
	AllowLossyRedis bool
	// Timeout bounds each Check: a Redis that has not answered by then (down, unreachable,
	// stopped) makes the guard answer 503 / UNAVAILABLE. 0 means fencing.DefaultStoreTimeout (1 s).
	Timeout time.Duration
}

// Pool hands out connections: a *redis.Pool is one.
type Pool interface {
	GetContext(ctx context.Context) (redis.Conn, error)
}

// Store is a fencing.Store in Redis.
type Store struct {
	pool    Pool
	keepMs  int64
	timeout time.Duration
}

// New checks the Redis's durability settings (see Options.AllowLossyRedis) and returns the store.
func New(ctx context.Context, pool Pool, opts Options) (*Store, error) {
	keep := opts.Keep
	if keep == 0 {
		keep = DefaultKeep
	}
	if keep < time.Millisecond {
		return nil, fmt.Errorf("fenceredis: Options.Keep must be at least 1ms, got %v", keep)
	}
	if !opts.AllowLossyRedis {
		if err := checkDurable(ctx, pool); err != nil {
			return nil, err
		}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = fencing.DefaultStoreTimeout
	}
	return &Store{pool: pool, keepMs: keep.Milliseconds(), timeout: timeout}, nil
}

// Key is the Redis key of a lock's fence record.
func Key(lock string) string { return "holdfast-fence:{" + lock + "}" }

// Check implements fencing.Store, within Options.Timeout.
func (s *Store) Check(ctx context.Context, lock string, token uint64) (fencing.Decision, error) {
	reply, err := storecall.Bounded(ctx, s.timeout, func(ctx context.Context) ([]interface{}, error) {
		conn, err := s.pool.GetContext(ctx)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return redis.Values(record.DoContext(ctx, conn, Key(lock), fencing.FormatToken(token), s.keepMs))
	})
	if err != nil {
		var replyErr redis.Error
		cause := storecall.Cause(err, "its Redis", s.timeout, "fenceredis Options.Timeout")
		if errors.As(err, &replyErr) {
			cause = "its Redis refused the script fence-record-1: " + replyErr.Error()
		}
		return fencing.Decision{}, &fencing.UnavailableError{Lock: lock, Cause: cause, Err: err}
	}
	var accepted int
	var newest string
	if _, err := redis.Scan(reply, &accepted, &newest); err != nil {
		return fencing.Decision{}, fmt.Errorf("fenceredis: fence-record-1 answered %v: %w", reply, err)
	}
	n, err := strconv.ParseUint(newest, 10, 64)
	if err != nil {
		return fencing.Decision{}, fmt.Errorf("fenceredis: the record of lock %q holds %q, not a token", lock, newest)
	}
	return fencing.Decision{Accepted: accepted == 1, Newest: n}, nil
}

// checkDurable refuses a Redis that can lose an acknowledged write: a record lost on a crash
// would let a stale holder through.
func checkDurable(ctx context.Context, pool Pool) error {
	conn, err := pool.GetContext(ctx)
	if err != nil {
		return fmt.Errorf("fenceredis: %w", err)
	}
	defer conn.Close()
	want := map[string]string{"appendonly": "yes", "appendfsync": "always"}
	for _, setting := range []string{"appendonly", "appendfsync"} {
		pair, err := redis.StringMap(conn.Do("CONFIG", "GET", setting))
		var replyErr redis.Error
		if errors.As(err, &replyErr) {
			return fmt.Errorf("fenceredis: cannot check that this Redis keeps acknowledged writes: CONFIG GET %s is refused (CONFIG disabled or renamed?): %v; "+
				"make sure of appendonly yes and appendfsync always yourself and set Options.AllowLossyRedis", setting, replyErr)
		}
		if err != nil {
			return fmt.Errorf("fenceredis: CONFIG GET %s: %w", setting, err)
		}
		if pair[setting] != want[setting] {
			return fmt.Errorf("fenceredis: this Redis has %s %s, so a crash can lose acknowledged fence records and let a stale holder through: "+
				"configure appendonly yes and appendfsync always, or set Options.AllowLossyRedis to accept that", setting, pair[setting])
		}
	}
	return nil
}
