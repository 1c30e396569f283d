// Package postgrestest tests fencing.PostgresStore against a real PostgreSQL
// (test/support/postgres.sh). It is a module of its own, never released, so that the driver its
// tests use, lib/pq, is not a requirement of the client module: the store itself needs only
// database/sql.
package postgrestest
