// Each fence store on its real backend, for tests that run the same cases against all three.
import type { Redis } from 'ioredis';
import { MemoryFenceStore, PostgresFenceStore, RedisFenceStore, type FenceStore } from '../../clients/ts/fencing';
import { startFencePostgres, startFenceRedis } from './backends';

export const STORE_KINDS = ['memory', 'redis', 'postgres'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

export interface OpenStore {
  store: FenceStore;
  /** Another store on the same backend (another guard process would have its own). */
  another(): Promise<FenceStore>;
  stop(): Promise<void>;
}

export async function openStore(kind: StoreKind): Promise<OpenStore> {
  if (kind === 'memory') {
    const store = new MemoryFenceStore();
    return { store, another: async () => store, stop: async () => {} };
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
    return { store: await RedisFenceStore.open(redis.client), another, stop };
  }
  const pg = await startFencePostgres();
  return { store: await PostgresFenceStore.open(pg.pool), another: () => PostgresFenceStore.open(pg.pool), stop: () => pg.stop() };
}
