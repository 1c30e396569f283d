"""The store in the resource's own PostgreSQL (psycopg2), usable inside the resource's transaction.

    with conn, conn.cursor() as cur:                           # one transaction
        fencing.postgres.enforce_in(cur, lock, token)          # raises StaleToken, or records it
        cur.execute("UPDATE accounts SET ...")                 # commits with the fence, or neither

The record and the write commit or roll back together. The fence row's update takes the row lock,
so two transactions for one lock check one after the other. For a conditional write instead (the
resource's row carries the token of its last writer), see fenced_update.
"""

import contextlib

from psycopg2 import sql

from holdfast.fencing.decision import Decision, StaleToken
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


class PostgresStore:
    """check(lock, token) in a transaction of its own, for the guards; `connect` returns a new
    psycopg2 connection (e.g. functools.partial(psycopg2.connect, dsn)). Creates the table if missing.
    Connections are reused, one per concurrent check."""

    def __init__(self, connect):
        self._connect = connect
        self._idle = []  # list.pop and append are atomic: no lock needed
        with self._connection() as cursor:
            create_table(cursor)

    @contextlib.contextmanager
    def _connection(self):
        try:
            conn = self._idle.pop()
        except IndexError:
            conn = self._connect()
        try:
            with conn.cursor() as cursor:
                yield cursor
            conn.commit()
        except BaseException:
            conn.close()  # ends its transaction unfinished; a broken connection is not reused
            raise
        self._idle.append(conn)

    def check(self, lock, token):
        with self._connection() as cursor:
            return check_in(cursor, lock, token)

    def close(self):
        while self._idle:
            self._idle.pop().close()
