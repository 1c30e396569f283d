// A fence store in PostgreSQL: one row per lock in holdfast_fences, checked and recorded by one
// statement. Run it on the transaction that makes the resource's write (`checkIn`, `withFence`),
// and the write and the fence commit or roll back together: no window between check and write.
import type { FenceDecision, FenceStore } from './store';

/** The one thing used of a PostgreSQL client: `query`, as pg's Client, PoolClient and Pool have it. */
export interface SqlQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[]; rowCount?: number | null }>;
}

export const FENCE_TABLE_SQL = 'CREATE TABLE IF NOT EXISTS holdfast_fences (lock text PRIMARY KEY, token numeric(20,0) NOT NULL)';

// The row is locked even when the WHERE refuses, so a concurrent older token waits for this
// transaction and then sees its token.
const CHECK_SQL = `INSERT INTO holdfast_fences (lock, token) VALUES ($1, $2)
ON CONFLICT (lock) DO UPDATE SET token = EXCLUDED.token WHERE holdfast_fences.token <= EXCLUDED.token
RETURNING token::text AS token`;
const NEWEST_SQL = 'SELECT token::text AS token FROM holdfast_fences WHERE lock = $1';

/** Checks and records `token` for `lock` on `db` (a transaction's client: it joins that transaction). */
export async function checkFence(db: SqlQueryable, lock: string, token: bigint): Promise<FenceDecision> {
  const recorded = await db.query(CHECK_SQL, [lock, token.toString()]);
  if (recorded.rows.length === 1) return { accepted: true, newest: token };
  const newest = await db.query(NEWEST_SQL, [lock]);
  return { accepted: false, newest: BigInt(String(newest.rows[0].token)) };
}

export class PostgresFenceStore implements FenceStore {
  private constructor(private readonly db: SqlQueryable) {}

  /** Creates holdfast_fences if missing. `db` may be a pool: each check then commits on its own. */
  static async open(db: SqlQueryable): Promise<PostgresFenceStore> {
    try {
      await db.query(FENCE_TABLE_SQL);
    } catch (err) {
      // Two guards creating it at once: the loser's IF NOT EXISTS can still hit the catalog's unique index.
      if ((err as { code?: string }).code !== '23505' && (err as { code?: string }).code !== '42P07') throw err;
    }
    return new PostgresFenceStore(db);
  }

  /** A check committed on its own (autocommit): the guards' way. */
  check(lock: string, token: bigint): Promise<FenceDecision> {
    return checkFence(this.db, lock, token);
  }
}

/**
 * Runs `work` in a transaction on `conn` (one connection: pg's Client or a PoolClient, not a Pool) after checking the fence in it: refused, nothing runs and
 * the transaction rolls back; accepted, the fence and `work`'s writes commit together (or neither,
 * if `work` throws).
 */
export async function withFence<T>(
  conn: SqlQueryable,
  lock: string,
  token: bigint,
  work: (tx: SqlQueryable) => Promise<T>,
): Promise<{ decision: FenceDecision; result?: T }> {
  await conn.query('BEGIN');
  try {
    const decision = await checkFence(conn, lock, token);
    if (!decision.accepted) {
      await conn.query('ROLLBACK');
      return { decision };
    }
    const result = await work(conn);
    await conn.query('COMMIT');
    return { decision, result };
  } catch (err) {
    await conn.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

export interface FencedUpdate {
  table: string;
  /** Columns that pick the row, e.g. `{ id: 7 }`. */
  key: Record<string, unknown>;
  /** Columns to set, e.g. `{ balance: 120 }`. */
  set: Record<string, unknown>;
  /** The row's fence column (numeric(20,0)); default `fencing_token`. */
  fenceColumn?: string;
  token: bigint;
}

/**
 * A conditional write: updates the row only if its fence column is not newer than `token`, and
 * records `token` there, in one UPDATE. Per row, not per lock: no fence table needed.
 * `updated` false with `newest` = the row's fence: a stale write changed nothing;
 * `newest` undefined: no such row.
 */
export async function fencedUpdate(db: SqlQueryable, update: FencedUpdate): Promise<{ updated: boolean; newest?: bigint }> {
  const fence = quoteIdent(update.fenceColumn ?? 'fencing_token');
  const table = update.table.split('.').map(quoteIdent).join('.');
  const setColumns = Object.keys(update.set);
  const keyColumns = Object.keys(update.key);
  if (setColumns.length === 0 || keyColumns.length === 0) throw new RangeError('fencedUpdate needs at least one column in `set` and one in `key`');
  const where = (first: number) => keyColumns.map((c, i) => `${quoteIdent(c)} = $${first + i}`).join(' AND ');
  const token = `$${setColumns.length + 1}`;
  const sets = [...setColumns.map((c, i) => `${quoteIdent(c)} = $${i + 1}`), `${fence} = ${token}`].join(', ');
  const keyValues = Object.values(update.key);
  const done = await db.query(`UPDATE ${table} SET ${sets} WHERE ${where(setColumns.length + 2)} AND (${fence} IS NULL OR ${fence} <= ${token}) RETURNING 1`, [
    ...Object.values(update.set),
    update.token.toString(),
    ...keyValues,
  ]);
  if (done.rows.length > 0) return { updated: true, newest: update.token };
  const row = await db.query(`SELECT ${fence}::text AS fence FROM ${table} WHERE ${where(1)}`, keyValues);
  if (row.rows.length === 0) return { updated: false };
  return { updated: false, newest: BigInt(String(row.rows[0].fence)) };
}

/** An SQL identifier in double quotes, inner quotes doubled (the standard's quoting). */
function quoteIdent(name: string): string {
  if (name === '') throw new RangeError('an empty SQL identifier');
  return `"${name.replace(/"/g, '""')}"`;
}
