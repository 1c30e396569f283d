package postgrestest

import (
	"context"
	"database/sql"
	"errors"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/holdfast/holdfast/clients/go/fencing"
	"github.com/holdfast/holdfast/clients/go/fencing/internal/fencetest"
)

func newPostgresStore(t *testing.T, db *sql.DB) *fencing.PostgresStore {
	store, err := fencing.NewPostgresStore(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func TestPostgresStoreDecides(t *testing.T) {
	fencetest.RunDecideCases(t, newPostgresStore(t, sharedPostgresDB(t)))
}

func TestPostgresStoreIsAtomicUnderConcurrency(t *testing.T) {
	store := newPostgresStore(t, sharedPostgresDB(t))
	if err := fencetest.Concurrent(context.Background(), store, fencetest.RandomLock(t), 200, 12); err != nil {
		t.Fatal(err)
	}
}

// Fenced writes through transactions that record the fence first: a stale writer changes nothing
// and is told so; the log of writes, in the order they were made, never goes back in tokens.
func TestPostgresFencedWrites(t *testing.T) {
	db := sharedPostgresDB(t)
	store, lock := newPostgresStore(t, db), fencetest.RandomLock(t)
	table := "fenced_log_" + fencetest.RandomID(t)
	if _, err := db.Exec(`CREATE TABLE ` + table + ` (id bigserial PRIMARY KEY, lock text, token numeric(20,0))`); err != nil {
		t.Fatal(err)
	}
	write := func(token uint64) error {
		return store.Fenced(context.Background(), lock, token, func(tx *sql.Tx) error {
			_, err := tx.Exec(`INSERT INTO `+table+` (lock, token) VALUES ($1, $2)`, lock, fencing.FormatToken(token))
			return err
		})
	}
	var wg sync.WaitGroup
	for token := uint64(1); token <= 60; token++ {
		wg.Add(1)
		go func(token uint64) {
			defer wg.Done()
			if err := write(token); err != nil && !fencing.IsStale(err) {
				t.Error(err)
			}
		}(token)
	}
	wg.Wait()
	rows, err := db.Query(`SELECT token FROM `+table+` WHERE lock = $1 ORDER BY id`, lock)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var last, count uint64
	for rows.Next() {
		var token uint64
		if err := rows.Scan(&token); err != nil {
			t.Fatal(err)
		}
		if token < last {
			t.Fatalf("write with token %d landed after one with %d", token, last)
		}
		last, count = token, count+1
	}
	if last != 60 || count == 0 {
		t.Fatalf("last write %d of %d, want token 60 last", last, count)
	}
	var stale *fencing.StaleError
	if err := write(59); !errors.As(err, &stale) || stale.Newest != 60 {
		t.Fatalf("a stale write: %v, want refused with newest 60", err)
	}
	// A write that fails rolls the fence back with it: token 61 is not recorded.
	failed := errors.New("the resource's write failed")
	if err := store.Fenced(context.Background(), lock, 61, func(*sql.Tx) error { return failed }); !errors.Is(err, failed) {
		t.Fatal(err)
	}
	if d, err := store.Check(context.Background(), lock, 60); err != nil || !d.Accepted {
		t.Fatalf("token 60 after a rolled-back 61: %+v, %v", d, err)
	}
}

// newestAfterCrash records 5 then 9 through db, restarts p in immediate mode and returns what
// the store then says of the stale token 8.
func newestAfterCrash(t *testing.T, p *postgres, db *sql.DB) fencing.Decision {
	store, lock := newPostgresStore(t, db), fencetest.RandomLock(t)
	for _, token := range []uint64{5, 9} {
		if d, err := store.Check(context.Background(), lock, token); err != nil || !d.Accepted {
			t.Fatalf("token %d: %+v, %v", token, d, err)
		}
	}
	p.restartAfterCrash(t)
	d, err := newPostgresStore(t, p.open(t)).Check(context.Background(), lock, 8)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The newest token survives an immediate stop (no shutdown checkpoint: crash recovery on start).
func TestPostgresKeepsTheNewestThroughACrash(t *testing.T) {
	p := startPostgres(t)
	defer p.stop()
	if d := newestAfterCrash(t, p, p.open(t)); d.Accepted || d.Newest != 9 {
		t.Fatalf("after the crash, token 8: %+v; want refused with newest 9", d)
	}
}

// Negative control: the same crash empties an UNLOGGED fence table (crash recovery resets it),
// and token 8 passes.
func TestPostgresUnloggedTableForgetsThroughACrash(t *testing.T) {
	p := startPostgres(t)
	defer p.stop()
	db := p.open(t)
	if _, err := db.Exec(`CREATE UNLOGGED TABLE holdfast_fences (lock text PRIMARY KEY, token numeric(20,0) NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if d := newestAfterCrash(t, p, db); !d.Accepted {
		t.Fatalf("an unlogged table kept its rows through the crash: %+v; the crash test cannot tell a lost record", d)
	}
}

// restartAfterCrash is pg_ctl restart in immediate mode: every server process gets SIGQUIT, no
// checkpoint, so the start runs crash recovery; it starts with the options postgres.sh gave it.
func (p *postgres) restartAfterCrash(t *testing.T) {
	data := filepath.Join(p.dir, "data")
	cmd := exec.Command("bash", "-c", `bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
if [ "$(id -u)" = 0 ]; then exec runuser -u postgres -- "$bin/pg_ctl" "$@"; else exec "$bin/pg_ctl" "$@"; fi`,
		"pg_ctl", "restart", "-m", "immediate", "-w", "-t", "30", "-D", data, "-l", filepath.Join(p.dir, "server.log"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl restart -m immediate: %v: %s", err, out)
	}
}
