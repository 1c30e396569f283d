package postgrestest

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "github.com/lib/pq" // the tests' driver; the store itself uses only database/sql

	"github.com/holdfast/holdfast/clients/go/internal/testrepo"
)

// postgres is a private server from test/support/postgres.sh, in dir.
type postgres struct {
	url, dir, script string
}

func startPostgres(t testing.TB) *postgres {
	parent, err := os.MkdirTemp("", "holdfast-go-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p := &postgres{dir: filepath.Join(parent, "pg"), script: filepath.Join(testrepo.Root(t), "test", "support", "postgres.sh")}
	out, err := exec.Command("bash", p.script, "start", p.dir).Output()
	if err != nil {
		t.Fatalf("postgres.sh start: %v", err)
	}
	for _, field := range strings.Fields(string(out)) {
		if strings.HasPrefix(field, "PGURL=") {
			p.url = strings.TrimPrefix(field, "PGURL=") + "?sslmode=disable"
		}
	}
	if p.url == "" {
		t.Fatalf("postgres.sh start printed no PGURL: %q", out)
	}
	return p
}

func (p *postgres) stop() {
	_ = exec.Command("bash", p.script, "stop", p.dir).Run()
	_ = os.RemoveAll(filepath.Dir(p.dir))
}

func (p *postgres) open(t testing.TB) *sql.DB {
	db, err := sql.Open("postgres", p.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

var (
	sharedPostgresOnce sync.Once
	sharedPostgres     *postgres
)

// sharedPostgresDB is a connection to the one server the package's tests share (stopped by TestMain).
func sharedPostgresDB(t testing.TB) *sql.DB {
	sharedPostgresOnce.Do(func() { sharedPostgres = startPostgres(t) })
	if sharedPostgres == nil {
		t.Fatal("the shared PostgreSQL did not start")
	}
	return sharedPostgres.open(t)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedPostgres != nil {
		sharedPostgres.stop()
	}
	os.Exit(code)
}
