// A fence store in PostgreSQL: one row per lock in holdfast_fences, checked and recorded by one
// statement. Run it on the transaction that makes the resource's write (`checkIn`, `withFence`),
// and the write and the fence commit or roll back together: no window between check and write.
// The guards' checks answer within a bound (timeoutMs, 1 s by default) even when PostgreSQL is down.
import { checkedTimeout, optionalPeer, withinBound, type FenceDecision, type FenceStore } from './store';

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

export interface PostgresFenceStoreOptions {
  /**
   * How long a check may wait for PostgreSQL, in ms (default 1000): past it, or at once when
   * PostgreSQL is known down, the check fails and the guard answers 503 / UNAVAILABLE.
   */
  timeoutMs?: number;
}

/** What PostgresFenceStore.connect gives pg's Pool, so a check fails fast when PostgreSQL is down. */
export function boundedPoolOptions(timeoutMs: number) {
  return {
    // No free connection and no new one within the bound (a pool otherwise waits for ever).
    connectionTimeoutMillis: timeoutMs,
    // A connection that takes the query and never answers (a frozen server, a black-holed network).
    query_timeout: timeoutMs,
  };
}

export class PostgresFenceStore implements FenceStore {
  private constructor(
    private readonly db: SqlQueryable,
    private readonly timeoutMs: number,
    /** Set when connect() built the pool: close() ends it. */
    private readonly owned?: { end(): Promise<void> },
  ) {}

  /**
   * A store on your client (pg's Pool, or anything with `query`); creates holdfast_fences if
   * missing. A pool commits each check on its own. The store bounds each check by `timeoutMs`
   * itself; give your Pool `connectionTimeoutMillis` and `query_timeout` (as connect() does), or
   * checks refused at the bound still wait inside it.
   */
  static async open(db: SqlQueryable, options: PostgresFenceStoreOptions = {}): Promise<PostgresFenceStore> {
    const timeoutMs = checkedTimeout(options.timeoutMs);
    try {
      await db.query(FENCE_TABLE_SQL);
    } catch (err) {
      // Two guards creating it at once: the loser's IF NOT EXISTS can still hit the catalog's unique index.
      if ((err as { code?: string }).code !== '23505' && (err as { code?: string }).code !== '42P07') throw err;
    }
    return new PostgresFenceStore(db, timeoutMs);
  }

  /**
   * A store on a pg Pool it builds (pg, an optional peer dependency) from a connection string or
   * pg's Pool options, with the options that make a check fail within `timeoutMs` when PostgreSQL
   * is down (boundedPoolOptions; your options add to or override them).
   */
  static async connect(config: string | Record<string, unknown>, options: PostgresFenceStoreOptions = {}): Promise<PostgresFenceStore> {
    const timeoutMs = checkedTimeout(options.timeoutMs);
    const pg = await optionalPeer(() => import('pg'), 'PostgresFenceStore.connect', 'pg@8');
    const given = typeof config === 'string' ? { connectionString: config } : config;
    const pool = new pg.Pool({ ...boundedPoolOptions(timeoutMs), ...given });
    pool.on('error', () => {}); // an idle connection ended (PostgreSQL restarted): the next check opens another
    try {
      const store = await PostgresFenceStore.open(pool, options);
      return new PostgresFenceStore(pool, store.timeoutMs, pool);
    } catch (err) {
      await pool.end().catch(() => {});
      throw new Error(`the fence store cannot use PostgreSQL: ${postgresFailure(err, timeoutMs)}`);
    }
  }

  /** A check committed on its own (autocommit): the guards' way. Rejects with a FenceStoreUnavailableError saying why in words. */
  check(lock: string, token: bigint): Promise<FenceDecision> {
    return withinBound(checkFence(this.db, lock, token), this.timeoutMs, `no answer from PostgreSQL within ${this.timeoutMs} ms`, (err) =>
      postgresFailure(err, this.timeoutMs),
    );
  }

  /** Ends the pool that connect() built (a client you passed to open() is yours to end). */
  async close(): Promise<void> {
    await this.owned?.end();
  }
}

/** Why a PostgreSQL query failed, in words (pg's messages name its own machinery). */
function postgresFailure(err: unknown, timeoutMs: number): string {
  const e = err as { message?: string; code?: string };
  const message = String(e?.message);
  const code = String(e?.code ?? '');
  if (code === 'ECONNREFUSED') return 'PostgreSQL refused the connection (nothing listens there)';
  if (/timeout exceeded when trying to connect|Connection terminated due to connection timeout/i.test(message))
    return `no connection to PostgreSQL within ${timeoutMs} ms`;
  if (/Query read timeout/i.test(message)) return `no answer from PostgreSQL within ${timeoutMs} ms`;
  if (code.startsWith('57P')) return 'PostgreSQL is shutting down or starting';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return "PostgreSQL's host name does not resolve";
  if (code === '28P01' || code === '28000') return 'PostgreSQL refused the credentials';
  if (code === '3D000') return 'the database does not exist';
  if (/Connection terminated|ECONNRESET|EPIPE|connection error|not queryable/i.test(message) || code.startsWith('08'))
    return 'the connection to PostgreSQL ended';
  return 'PostgreSQL answered the check with an error';
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
