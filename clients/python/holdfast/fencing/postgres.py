"""The store in the resource's own PostgreSQL (psycopg2), usable inside the resource's transaction.

    with conn, conn.cursor() as cur:                           # one transaction
        fencing.postgres.enforce_in(cur, lock, token)          # raises StaleToken, or records it
        cur.execute("UPDATE accounts SET ...")                 # commits with the fence, or neither

The record and the write commit or roll back together. The fence row's update takes the row lock,
so two transactions for one lock check one after the other. For a conditional write instead (the
resource's row carries the token of its last writer), see fenced_update.

PostgresStore, the guards' store, fails closed in bounded time: a check PostgreSQL does not answer
within `timeout` seconds (default 1) raises FenceStoreUnavailable (503 / UNAVAILABLE). The store
enforces the bound itself around every check, for connections from your `connect` function too;
PostgresStore.from_dsn also sets each connection's connect_timeout (libpq's least, 2 s, for a
connect the store stops waiting for after `timeout` anyway) and statement_timeout. The helpers
that run in your transaction (check_in, enforce_in, fenced_update) are bounded by your connection's
own settings.
"""

import contextlib
import math

import psycopg2
import psycopg2.errors
import psycopg2.extensions
from psycopg2 import sql

from holdfast.fencing import bounded
from holdfast.fencing.decision import Decision, StaleToken
from holdfast.fencing.refusals import FenceStoreUnavailable
from holdfast.fencing.wire import encode_token

CREATE_TABLE = "CREATE TABLE IF NOT EXISTS holdfast_fences (lock text PRIMARY KEY, token numeric(20,0) NOT NULL)"
CHECK_AND_RECORD = (
    "INSERT INTO holdfast_fences (lock, token) VALUES (%s, %s) "
    "ON CONFLICT (lock) DO UPDATE SET token = EXCLUDED.token WHERE holdfast_fences.token <= EXCLUDED.token "
    "RETURNING token")
NEWEST = "SELECT token FROM holdfast_fences WHERE lock = %s"


def create_table(cursor):
    cursor.execute(CREATE_TABLE)


def check_in(cursor, lock, token):
    """Decision(accepted, newest) in the cursor's transaction: the record commits with it."""
    cursor.execute(CHECK_AND_RECORD, (lock, encode_token(token)))
    row = cursor.fetchone()
    if row is not None:
        return Decision(True, int(row[0]))
    cursor.execute(NEWEST, (lock,))  # the conflicting row is locked by our statement: this reads it
    return Decision(False, int(cursor.fetchone()[0]))


def enforce_in(cursor, lock, token):
    """check_in, raising StaleToken when refused (roll the transaction back then)."""
    decision = check_in(cursor, lock, token)
    if not decision.accepted:
        raise StaleToken(lock, token, decision.newest)
    return decision


def fenced_update(cursor, table, values, key, lock, token, fence_column="fence_token"):
    """UPDATE table SET values..., fence_column = token WHERE key... AND fence_column <= token.

    The resource's row keeps the token of its last writer in `fence_column` (numeric(20,0), NULL
    before the first fenced write), so a stale holder's write matches no row and changes nothing.
    Returns the number of rows written; raises StaleToken (with the row's token) when the key's
    row exists but carries a newer token. `values` and `key` are dicts of column -> value.
    """
    token_text = encode_token(token)
    fence = sql.Identifier(fence_column)
    assignments = [sql.SQL("{} = %s").format(sql.Identifier(column)) for column in values]
    matches = [sql.SQL("{} = %s").format(sql.Identifier(column)) for column in key]
    where = sql.SQL(" AND ").join(matches)
    update = sql.SQL("UPDATE {table} SET {sets}, {fence} = %s WHERE {where} AND ({fence} IS NULL OR {fence} <= %s)").format(
        table=sql.Identifier(table), sets=sql.SQL(", ").join(assignments), fence=fence, where=where)
    cursor.execute(update, [*values.values(), token_text, *key.values(), token_text])
    if cursor.rowcount > 0:
        return cursor.rowcount
    cursor.execute(sql.SQL("SELECT max({fence}) FROM {table} WHERE {where}").format(
        fence=fence, table=sql.Identifier(table), where=where), list(key.values()))
    newest = cursor.fetchone()[0]
    if newest is not None and int(newest) > int(token):
        raise StaleToken(lock, int(token), int(newest))
    return 0


def _where(host, port, dbname):
    return f"{host or 'localhost'}:{port or 5432}/{dbname or ''}".rstrip("/")


def _in_words(error):
    """What a psycopg2 error says about the server, in words."""
    if isinstance(error, psycopg2.errors.QueryCanceled):
        return "cancelled the check at its statement_timeout"
    if isinstance(error, (psycopg2.OperationalError, psycopg2.InterfaceError)):
        return "cannot be reached (the connection failed or was closed)"
    return f"failed the check (SQLSTATE {error.pgcode})" if getattr(error, "pgcode", None) else "failed the check"


class PostgresStore:
    """check(lock, token) in a transaction of its own, for the guards; `connect` returns a new
    psycopg2 connection (e.g. functools.partial(psycopg2.connect, dsn)). Creates the table if missing.
    Connections are reused, one per concurrent check. `timeout` (seconds, default 1) bounds each
    check: see the module's doc."""

    def __init__(self, connect, timeout=bounded.DEFAULT_TIMEOUT_S, where=None):
        self._connect = connect
        self._timeout = bounded.check_timeout(timeout)
        self.where = where
        self._idle = []  # list.pop and append are atomic: no lock needed
        try:
            bounded.within(self._timeout * 10, self._create_table)
        except (bounded.Timeout, psycopg2.Error) as error:
            cause = f"no answer within {self._timeout * 10:g} s" if isinstance(error, bounded.Timeout) else _in_words(error)
            raise ConnectionError(f"the fence store cannot create its table in PostgreSQL at {self.where or 'its connect function'}: "
                                  f"{cause}") from None

    @classmethod
    def from_dsn(cls, dsn, timeout=bounded.DEFAULT_TIMEOUT_S):
        """A store whose connections to `dsn` it makes itself, with connect_timeout and statement_timeout set."""
        timeout = bounded.check_timeout(timeout)
        params = psycopg2.extensions.parse_dsn(dsn)

        def connect():
            conn = psycopg2.connect(dsn, connect_timeout=max(2, math.ceil(timeout)))
            with conn.cursor() as cursor:
                cursor.execute("SET statement_timeout = %s", (max(1, round(timeout * 1000)),))
            conn.commit()
            return conn
        return cls(connect, timeout, _where(params.get("host"), params.get("port"), params.get("dbname")))

    def _create_table(self):
        with self._connection() as cursor:
            create_table(cursor)

    @contextlib.contextmanager
    def _connection(self):
        try:
            conn = self._idle.pop()
        except IndexError:
            conn = self._connect()
            if self.where is None:
                self.where = _where(conn.info.host, conn.info.port, conn.info.dbname)
        try:
            with conn.cursor() as cursor:
                yield cursor
            conn.commit()
        except BaseException:
            conn.close()  # ends its transaction unfinished; a broken connection is not reused
            raise
        self._idle.append(conn)

    def _check(self, lock, token):
        with self._connection() as cursor:
            return check_in(cursor, lock, token)

    def check(self, lock, token):
        """Decision(accepted, newest), committed; raises FenceStoreUnavailable when PostgreSQL does
        not answer within the timeout."""
        where = self.where or "its connect function"
        try:
            return bounded.within(self._timeout, self._check, lock, token)
        except bounded.Timeout:
            raise FenceStoreUnavailable(lock, f"PostgreSQL at {where} did not answer within {self._timeout:g} s") from None
        except psycopg2.Error as error:
            raise FenceStoreUnavailable(lock, f"PostgreSQL at {where} {_in_words(error)}") from None

    def close(self):
        while self._idle:
            self._idle.pop().close()
