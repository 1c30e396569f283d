// Each fence store on its real backend, for tests that run the same cases against all three.
import type { Redis } from 'ioredis';
import { fenceKey, MemoryFenceStore, PostgresFenceStore, RedisFenceStore, type FenceStore } from '../../clients/ts/fencing';
import { startFencePostgres, startFenceRedis } from './backends';

export const STORE_KINDS = ['memory', 'redis', 'postgres'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

export interface OpenStore {
  store: FenceStore;
  /** Another store on the same backend (another guard process would have its own). */
  another(): Promise<FenceStore>;
  /** The newest token the backend holds for `lock`, read from the backend itself (not through the store); undefined when none. */
  recorded(lock: string): Promise<bigint | undefined>;
  /** Redis: how many fence scripts (EVALSHA, EVAL) the redis-server ran, by its INFO commandstats; undefined for the others. */
  scriptRuns(): Promise<number | undefined>;
  stop(): Promise<void>;
}

/** A store whose calls are counted: the guard's every question to the store passes here. */
export function counted(store: FenceStore): { store: FenceStore; calls(): number } {
  let calls = 0;
  return {
    store: {
      check(lock, token) {
        calls++;
        return store.check(lock, token);
      },
    },
    calls: () => calls,
  };
}

export async function openStore(kind: StoreKind): Promise<OpenStore> {
  if (kind === 'memory') {
    const store = new MemoryFenceStore();
    // The store is the backend: its own map, read without a check.
    const recorded = async (lock: string) => (store as unknown as { newest: Map<string, bigint> }).newest.get(lock);
    return { store, another: async () => store, recorded, scriptRuns: async () => undefined, stop: async () => {} };
  }
  if (kind === 'redis') {
    const redis = await startFenceRedis();
    const others: Redis[] = [];
    const another = () => {
      const client = redis.client.duplicate().on('error', () => {});
      others.push(client);
      return RedisFenceStore.open(client);
    };
    const stop = async () => {
      others.forEach((c) => c.disconnect());
      await redis.stop();
    };
    const recorded = async (lock: string) => {
      const value = await redis.client.get(fenceKey(lock));
      return value === null ? undefined : BigInt(value);
    };
    const scriptRuns = async () => {
      const stats = await redis.client.info('commandstats');
      return [...stats.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    };
    return { store: await RedisFenceStore.open(redis.client), another, recorded, scriptRuns, stop };
  }
  const pg = await startFencePostgres();
  const recorded = async (lock: string) => {
    const { rows } = await pg.pool.query('SELECT token::text AS token FROM holdfast_fences WHERE lock = $1', [lock]);
    return rows.length === 0 ? undefined : BigInt(rows[0].token);
  };
  return {
    store: await PostgresFenceStore.open(pg.pool),
    another: () => PostgresFenceStore.open(pg.pool),
    recorded,
    scriptRuns: async () => undefined,
    stop: () => pg.stop(),
  };
}
