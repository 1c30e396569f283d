package fencing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/holdfast/holdfast/clients/go/fencing/internal/storecall"
)

// The fence table, created by NewPostgresStore when missing. numeric(20,0) holds any uint64.
const createFenceTable = `CREATE TABLE IF NOT EXISTS holdfast_fences (lock text PRIMARY KEY, token numeric(20,0) NOT NULL)`

// recordFence compares and records in one statement: the row is written (and locked until the
// transaction ends) only when the stored token is not newer; no row back means stale.
const recordFence = `INSERT INTO holdfast_fences (lock, token) VALUES ($1, $2::numeric)
ON CONFLICT (lock) DO UPDATE SET token = EXCLUDED.token WHERE holdfast_fences.token <= EXCLUDED.token
RETURNING token::text`

const readFence = `SELECT token::text FROM holdfast_fences WHERE lock = $1`

// Querier runs a statement: *sql.DB, *sql.Tx and *sql.Conn are ones.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...interface{}) *sql.Row
}

// PostgresStore keeps the newest tokens in the table holdfast_fences of a PostgreSQL database,
// through database/sql with any PostgreSQL driver (lib/pq, pgx's stdlib). Committed records
// survive a PostgreSQL crash. Use Fenced (or CheckIn inside your own transaction) so the
// resource's write and the fence commit or roll back together.
//
// Check (the guards' call) fails closed in bounded time: it gives its statement a context that
// ends after Timeout (DefaultStoreTimeout, 1 s, when 0) and answers an *UnavailableError then,
// even if the driver has not returned (the store takes your *sql.DB, so it bounds each call
// rather than setting the driver's options).
type PostgresStore struct {
	DB      *sql.DB
	Timeout time.Duration
}

// NewPostgresStore creates the fence table if it is missing.
func NewPostgresStore(ctx context.Context, db *sql.DB) (*PostgresStore, error) {
	if _, err := db.ExecContext(ctx, createFenceTable); err != nil {
		return nil, fmt.Errorf("fencing: creating holdfast_fences: %w", err)
	}
	return &PostgresStore{DB: db}, nil
}

// Check implements Store, in a statement of its own, within Timeout.
func (s *PostgresStore) Check(ctx context.Context, lock string, token uint64) (Decision, error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultStoreTimeout
	}
	d, err := storecall.Bounded(ctx, timeout, func(ctx context.Context) (Decision, error) { return CheckIn(ctx, s.DB, lock, token) })
	if err != nil {
		return Decision{}, &UnavailableError{Lock: lock, Cause: storecall.Cause(err, "its PostgreSQL", timeout, "PostgresStore.Timeout"), Err: err}
	}
	return d, nil
}

// CheckIn compares and records the token through q; inside a transaction, the record (and the
// row lock that makes later writers of the lock wait) lasts until that transaction ends.
func CheckIn(ctx context.Context, q Querier, lock string, token uint64) (Decision, error) {
	var newest string
	err := q.QueryRowContext(ctx, recordFence, lock, FormatToken(token)).Scan(&newest)
	if errors.Is(err, sql.ErrNoRows) {
		err = q.QueryRowContext(ctx, readFence, lock).Scan(&newest)
		if err == nil {
			n, perr := strconv.ParseUint(newest, 10, 64)
			return Decision{Accepted: false, Newest: n}, perr
		}
	}
	if err != nil {
		return Decision{}, fmt.Errorf("fencing: recording the fence of lock %q: %w", lock, err)
	}
	return Decision{Accepted: true, Newest: token}, nil
}

// Fenced runs write in a transaction that first records the fence: a stale token rolls back and
// returns a *StaleError without calling write; an error from write rolls back the fence too.
// Other writers of the same lock wait for this transaction to end, so a stale holder's write can
// never land after a newer one's.
func (s *PostgresStore) Fenced(ctx context.Context, lock string, token uint64, write func(tx *sql.Tx) error) error {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	d, err := CheckIn(ctx, tx, lock, token)
	if err != nil {
		return err
	}
	if !d.Accepted {
		return &StaleError{Lock: lock, Token: token, Newest: d.Newest}
	}
	if err := write(tx); err != nil {
		return err
	}
	return tx.Commit()
}
