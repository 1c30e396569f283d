// Many real locks at once, for the dashboard's test and benchmark: each granted by the server's own
// acquire script, all in one pipeline (a gRPC call each would spend most of the run making them).
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { lockKeys, scriptKeys } from '../../src/engine/keys';
import { lockLibrary } from '../../src/redis/functions';

export async function grantMany(redis: Redis, names: string[], owner: string, ttlMs: number, keyPrefix = 'hf'): Promise<void> {
  const library = lockLibrary();
  await library.load(redis);
  const pipeline = redis.pipeline();
  for (const name of names) {
    // token, owner, ttl_ms, mode (exclusive), limit, request id, waiter id, entry lease, hold id, max waiters
    const args = [randomBytes(16).toString('base64url'), owner, ttlMs, 1, 1, '', '', 3000, '', 0];
    library.queue(pipeline, 'acquire', scriptKeys(lockKeys(keyPrefix, name), 4), args);
  }
  await pipeline.exec();
}
