// Redis in Action's own lock (section 6.2.5, acquire_lock_with_timeout and release_lock), in the
// application's Redis: SET NX with an expiry and a random identifier, tried again every
// millisecond until the wait is over; released only by the identifier that took it (a Lua
// compare-and-delete, as the book's chapter 11 does it). The baseline holdfast's fine version
// is measured against, on the same lock names.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The identifier that holds `name` now, or null when it was not free within `waitMs`. */
export async function acquireBookLock(redis: Redis, name: string, waitMs: number, ttlMs: number): Promise<string | null> {
  const identifier = randomUUID();
  const until = performance.now() + waitMs;
  do {
    if (await redis.set(`lock:${name}`, identifier, 'PX', ttlMs, 'NX')) return identifier;
    await sleep(1);
  } while (performance.now() < until);
  return null;
}

export async function releaseBookLock(redis: Redis, name: string, identifier: string): Promise<void> {
  await redis.eval(RELEASE, 1, `lock:${name}`, identifier);
}
