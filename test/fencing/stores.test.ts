// Each store on its real backend: atomic under concurrency, and what survives a restart.
import { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkFence, fencedUpdate, PostgresFenceStore, RedisFenceStore, withFence, type FenceStore } from '../../clients/ts/fencing';
import { uniqueName } from '../support/redis';
import { DURABLE_REDIS, startFencePostgres, startFenceRedis, type FencePostgres, type FenceRedis } from './backends';
import { openStore, STORE_KINDS, type OpenStore } from './stores';

const WAVES = 30;
const PER_WAVE = 16;

function shuffled(values: bigint[]): bigint[] {
  const out = [...values];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/**
 * Waves of concurrent checks with shuffled tokens on one lock, spread over `stores` (guards in
 * several processes share one backend). After each wave the newest recorded must be the greatest
 * token sent so far, and no accepted token may be older than one accepted in an earlier wave.
 * Returns the violations seen.
 */
async function raceWaves(stores: FenceStore[]): Promise<string[]> {
  const lock = uniqueName('race');
  const violations: string[] = [];
  let greatest = 0n;
  for (let wave = 0; wave < WAVES; wave++) {
    const tokens = shuffled(Array.from({ length: PER_WAVE }, (_, i) => BigInt(wave * PER_WAVE + i + 1)));
    const decisions = await Promise.all(tokens.map((t, i) => stores[i % stores.length].check(lock, t)));
    for (const [i, d] of decisions.entries()) {
      if (d.accepted && tokens[i] < greatest) violations.push(`wave ${wave}: ${tokens[i]} accepted after ${greatest} was`);
      if (!d.accepted && d.newest <= tokens[i]) violations.push(`wave ${wave}: ${tokens[i]} refused with newest ${d.newest}`);
    }
    // biome-ignore lint/complexity/useMathMinMax: the tokens are bigints, which Math.max refuses
    greatest = tokens.reduce((a, b) => (a > b ? a : b));
    const { newest } = await stores[0].check(lock, 0n);
    if (newest !== greatest) violations.push(`wave ${wave}: newest ${newest}, not ${greatest}`);
  }
  return violations;
}

describe.each(STORE_KINDS)('%s store under concurrency', (kind) => {
  let open: OpenStore;
  beforeAll(async () => {
    open = await openStore(kind);
  }, 60_000);
  afterAll(() => open?.stop());

  it('never lets the newest token go down', async () => {
    const stores = [open.store, await open.another(), await open.another()];
    expect(await raceWaves(stores)).toEqual([]);
  }, 60_000);
});

describe('negative control: a compare-then-record in two steps (GET, then SET) on the same Redis', () => {
  let redis: FenceRedis;
  beforeAll(async () => {
    redis = await startFenceRedis();
  });
  afterAll(() => redis?.stop());

  it('lets the newest token go down: the race checker sees it', async () => {
    const twoSteps: FenceStore = {
      async check(lock, token) {
        const seen = await redis.client.get(`two-steps:${lock}`);
        if (seen !== null && token < BigInt(seen)) return { accepted: false, newest: BigInt(seen) };
        await redis.client.set(`two-steps:${lock}`, token.toString(), 'PX', 60_000);
        return { accepted: true, newest: token };
      },
    };
    expect((await raceWaves([twoSteps])).length).toBeGreaterThan(0);
  }, 60_000);
});

describe('Redis store: persistence settings', () => {
  const cases = [
    { args: ['--appendonly', 'no'], names: 'appendonly' },
    { args: ['--appendonly', 'yes', '--appendfsync', 'everysec'], names: 'appendfsync' },
    { args: [...DURABLE_REDIS, '--rename-command', 'CONFIG', ''], names: 'CONFIG' },
  ];
  it.each(cases)('refuses a Redis started with $args, naming $names; allowLossyRedis accepts it', async ({ args, names }) => {
    const redis = await startFenceRedis(args);
    try {
      await expect(RedisFenceStore.open(redis.client)).rejects.toThrow(names);
      await expect(RedisFenceStore.open(redis.client)).rejects.toThrow('allowLossyRedis');
      const lossy = await RedisFenceStore.open(redis.client, { allowLossyRedis: true });
      expect(await lossy.check(uniqueName(), 1n)).toEqual({ accepted: true, newest: 1n });
    } finally {
      await redis.stop();
    }
  });

  it('opens on appendonly yes + appendfsync always', async () => {
    const redis = await startFenceRedis();
    try {
      await expect(RedisFenceStore.open(redis.client)).resolves.toBeInstanceOf(RedisFenceStore);
    } finally {
      await redis.stop();
    }
  });

  it('refuses a keep time that is not a positive whole number of ms, naming keepMs', async () => {
    await expect(RedisFenceStore.open({ call: async () => [] }, { keepMs: 0 })).rejects.toThrow('keepMs');
  });

  it('keeps a record keepMs after its last accepted request, refreshed by each', async () => {
    const redis = await startFenceRedis();
    try {
      const store = await RedisFenceStore.open(redis.client, { keepMs: 60_000 });
      const lock = uniqueName();
      await store.check(lock, 3n);
      const key = `holdfast-fence:{${lock}}`;
      expect(await redis.client.pttl(key)).toBeGreaterThan(50_000);
      await redis.client.pexpire(key, 10_000);
      await store.check(lock, 3n); // the same holder again: refreshed
      expect(await redis.client.pttl(key)).toBeGreaterThan(50_000);
    } finally {
      await redis.stop();
    }
  });
});

describe('Redis store: SIGKILL and restart on the same data dir', () => {
  async function newestAfterKill(args: string[]): Promise<bigint> {
    const redis = await startFenceRedis(args);
    try {
      const store = await RedisFenceStore.open(redis.client, { allowLossyRedis: true });
      const lock = uniqueName('restart');
      for (const t of [5n, 9n, 12n]) expect((await store.check(lock, t)).accepted).toBe(true);
      await redis.killAndRestart();
      return (await store.check(lock, 0n)).newest;
    } finally {
      await redis.stop();
    }
  }

  it('with appendonly yes + appendfsync always, comes back with the newest token', async () => {
    expect(await newestAfterKill(DURABLE_REDIS)).toBe(12n);
  });

  it('negative control: with appendonly no it comes back without it (a stale 0 is accepted)', async () => {
    expect(await newestAfterKill(['--appendonly', 'no', '--save', ''])).toBe(0n);
  });
});

describe('PostgreSQL store', () => {
  let pg: FencePostgres;
  let store: PostgresFenceStore;
  beforeAll(async () => {
    pg = await startFencePostgres();
    store = await PostgresFenceStore.open(pg.pool);
    await Promise.all([PostgresFenceStore.open(pg.pool), PostgresFenceStore.open(pg.pool)]); // opening again is harmless
    await pg.pool.query('CREATE TABLE docs (id int PRIMARY KEY, body text NOT NULL, fencing_token numeric(20,0))');
  }, 60_000);
  afterAll(() => pg?.stop());

  it('commits the fence with the resource write, or neither', async () => {
    const lock = uniqueName('tx');
    const conn = await pg.pool.connect();
    try {
      await conn.query("INSERT INTO docs VALUES (1, 'first', NULL)");
      await expect(
        withFence(conn, lock, 7n, async (tx) => {
          await tx.query("UPDATE docs SET body = 'by 7' WHERE id = 1");
          throw new Error('the write failed after the check');
        }),
      ).rejects.toThrow('the write failed');
      expect((await pg.pool.query('SELECT body FROM docs WHERE id = 1')).rows[0].body).toBe('first');
      expect((await store.check(lock, 0n)).newest).toBe(0n); // 7 rolled back with the write (0 is the first token seen)
      const ok = await withFence(conn, lock, 8n, (tx) => tx.query("UPDATE docs SET body = 'by 8' WHERE id = 1"));
      expect(ok.decision).toEqual({ accepted: true, newest: 8n });
      const stale = await withFence(conn, lock, 7n, (tx) => tx.query("UPDATE docs SET body = 'by stale 7' WHERE id = 1"));
      expect(stale).toEqual({ decision: { accepted: false, newest: 8n } });
      expect((await pg.pool.query('SELECT body FROM docs WHERE id = 1')).rows[0].body).toBe('by 8');
    } finally {
      conn.release();
    }
  });

  it('a stale check inside a transaction waits for the newer one and is then refused', async () => {
    const lock = uniqueName('wait');
    const newer = await pg.pool.connect();
    const older = await pg.pool.connect();
    try {
      await newer.query('BEGIN');
      expect(await checkFence(newer, lock, 10n)).toEqual({ accepted: true, newest: 10n });
      await older.query('BEGIN');
      const stale = checkFence(older, lock, 9n); // blocks on the row until `newer` ends
      await newer.query('COMMIT');
      expect(await stale).toEqual({ accepted: false, newest: 10n });
      await older.query('ROLLBACK');
    } finally {
      newer.release();
      older.release();
    }
  });

  it('fencedUpdate: a stale write changes nothing and reports the newer fence', async () => {
    await pg.pool.query("INSERT INTO docs VALUES (2, 'start', NULL)");
    expect(await fencedUpdate(pg.pool, { table: 'docs', key: { id: 2 }, set: { body: 'by 4' }, token: 4n })).toEqual({ updated: true, newest: 4n });
    expect(await fencedUpdate(pg.pool, { table: 'docs', key: { id: 2 }, set: { body: 'by 4 again' }, token: 4n })).toEqual({ updated: true, newest: 4n });
    expect(await fencedUpdate(pg.pool, { table: 'docs', key: { id: 2 }, set: { body: 'by stale 3' }, token: 3n })).toEqual({ updated: false, newest: 4n });
    expect(await fencedUpdate(pg.pool, { table: 'docs', key: { id: 99 }, set: { body: 'x' }, token: 5n })).toEqual({ updated: false });
    expect((await pg.pool.query('SELECT body, fencing_token::text AS f FROM docs WHERE id = 2')).rows[0]).toEqual({ body: 'by 4 again', f: '4' });
  });

  it('keeps the newest token through an immediate stop (no checkpoint) and restart; negative control: an UNLOGGED fence table loses it', async () => {
    const lock = uniqueName('crash');
    for (const t of [3n, 18446744073709551615n]) expect((await store.check(lock, t)).accepted).toBe(true);
    // The control: the same store on an UNLOGGED holdfast_fences, which crash recovery empties.
    await pg.pool.query('CREATE DATABASE lossy');
    const lossyUrl = pg.url.replace(/\/postgres$/, '/lossy');
    const lossyPool = new Pool({ connectionString: lossyUrl });
    await lossyPool.query('CREATE UNLOGGED TABLE holdfast_fences (lock text PRIMARY KEY, token numeric(20,0) NOT NULL)');
    expect((await (await PostgresFenceStore.open(lossyPool)).check(lock, 12n)).accepted).toBe(true);
    await lossyPool.end();

    await pg.crashAndRestart();
    const reopened = await PostgresFenceStore.open(pg.pool);
    expect(await reopened.check(lock, 18446744073709551614n)).toEqual({ accepted: false, newest: 18446744073709551615n });
    const lossyAfter = new Pool({ connectionString: lossyUrl });
    try {
      expect(await (await PostgresFenceStore.open(lossyAfter)).check(lock, 1n)).toEqual({ accepted: true, newest: 1n });
    } finally {
      await lossyAfter.end();
    }
  }, 90_000);
});
