// Redis in Action's marketplace (sections 4.4 and 6.2): sellers list items from their inventory
// into one market ZSET, buyers buy them with the funds in their user HASH. Three versions of
// list and purchase, as the book has them:
// - watch:  optimistic WATCH/MULTI/EXEC transactions, retried when a watched key changed;
// - coarse: one holdfast lock on the whole market around each operation;
// - fine:   holdfast multi-locks on exactly what an operation touches: the item and the seller
//           to list, the item, the buyer and the seller to buy (the book locked the item only);
// - book:   the same names under the book's own Redis lock (book-lock.ts), taken in sorted order.
// Each returns how many times it had to try again.
import type { Redis } from 'ioredis';
import { NotAcquiredError, type HoldfastClient } from '../../clients/ts/index';
import { acquireBookLock, releaseBookLock } from './book-lock';

export type Version = 'watch' | 'coarse' | 'fine' | 'book';

export interface Market {
  /** Keys of this run, so that runs never share state. */
  prefix: string;
  redis: Redis;
  /** Used by the holdfast versions. */
  locks: HoldfastClient;
}

const LOCK_TTL_MS = 10_000;
const LOCK_WAIT_MS = 10_000;

const keys = (m: Market) => ({
  market: `${m.prefix}:market`,
  inventory: (user: string) => `${m.prefix}:inventory:${user}`,
  user: (user: string) => `${m.prefix}:users:${user}`,
});

/** Runs `fn` under the version's locks on `names`: the book's, or holdfast's. */
function withLocks<T>(version: Version, m: Market, names: string[], fn: () => Promise<T>): Promise<{ result: T; retries: number }> {
  return version === 'book' ? withBookLocks(m, names, fn) : withHoldfastLocks(m, names, fn);
}

/** The book's locks, one name at a time in sorted order (so two operations never deadlock); a lock not free in time is a retry. */
async function withBookLocks<T>(m: Market, names: string[], fn: () => Promise<T>): Promise<{ result: T; retries: number }> {
  const sorted = [...names].sort();
  for (let retries = 0; ; retries++) {
    const taken: [string, string][] = [];
    try {
      for (const name of sorted) {
        const identifier = await acquireBookLock(m.redis, name, LOCK_WAIT_MS, LOCK_TTL_MS);
        if (identifier === null) break;
        taken.push([name, identifier]);
      }
      if (taken.length === sorted.length) return { result: await fn(), retries };
    } finally {
      for (const [name, identifier] of taken.reverse()) await releaseBookLock(m.redis, name, identifier);
    }
  }
}

/** What a holdfast version does while holding its locks; a lock not granted in time is a retry. */
async function withHoldfastLocks<T>(m: Market, names: string[], fn: () => Promise<T>): Promise<{ result: T; retries: number }> {
  for (let retries = 0; ; retries++) {
    try {
      const set = await m.locks.acquireSet(names, { ttlMs: LOCK_TTL_MS, waitMs: LOCK_WAIT_MS });
      try {
        return { result: await fn(), retries };
      } finally {
        await set.release();
      }
    } catch (err) {
      if (!(err instanceof NotAcquiredError)) throw err;
    }
  }
}

/** Lists `item` of `seller` at `price`; false when the seller does not have it. */
export async function listItem(version: Version, m: Market, item: string, seller: string, price: number): Promise<{ listed: boolean; retries: number }> {
  const k = keys(m);
  const member = `${item}.${seller}`;
  if (version === 'watch') {
    for (let retries = 0; ; retries++) {
      await m.redis.watch(k.inventory(seller));
      if (!(await m.redis.sismember(k.inventory(seller), item))) {
        await m.redis.unwatch();
        return { listed: false, retries };
      }
      const done = await m.redis.multi().zadd(k.market, price, member).srem(k.inventory(seller), item).exec();
      if (done) return { listed: true, retries };
    }
  }
  const names = version === 'coarse' ? [`${m.prefix}:market`] : [`${m.prefix}:item:${member}`, `${m.prefix}:user:${seller}`];
  const { result, retries } = await withLocks(version, m, names, async () => {
    if (!(await m.redis.sismember(k.inventory(seller), item))) return false;
    await m.redis.multi().zadd(k.market, price, member).srem(k.inventory(seller), item).exec();
    return true;
  });
  return { listed: result, retries };
}

/** Buys `item` of `seller` for `buyer`; false when it is sold already or the buyer cannot pay. */
export async function purchaseItem(version: Version, m: Market, buyer: string, item: string, seller: string): Promise<{ bought: boolean; retries: number }> {
  const k = keys(m);
  const member = `${item}.${seller}`;
  const transfer = (price: number) =>
    m.redis.multi().hincrby(k.user(seller), 'funds', price).hincrby(k.user(buyer), 'funds', -price).sadd(k.inventory(buyer), item).zrem(k.market, member);
  const affordable = async () => {
    const [price, funds] = await Promise.all([m.redis.zscore(k.market, member), m.redis.hget(k.user(buyer), 'funds')]);
    return price !== null && Number(price) <= Number(funds) ? Number(price) : null;
  };
  if (version === 'watch') {
    for (let retries = 0; ; retries++) {
      await m.redis.watch(k.market, k.user(buyer));
      const price = await affordable();
      if (price === null) {
        await m.redis.unwatch();
        return { bought: false, retries };
      }
      if (await transfer(price).exec()) return { bought: true, retries };
    }
  }
  const names = version === 'coarse' ? [`${m.prefix}:market`] : [`${m.prefix}:item:${member}`, `${m.prefix}:user:${buyer}`, `${m.prefix}:user:${seller}`];
  const { result, retries } = await withLocks(version, m, names, async () => {
    const price = await affordable();
    if (price === null) return false;
    await transfer(price).exec();
    return true;
  });
  return { bought: result, retries };
}

/** Sets up users with funds; sellers start with empty inventories (they make items as they list). */
export async function setUp(m: Market, users: string[], funds: number): Promise<void> {
  const k = keys(m);
  await Promise.all(users.map((u) => m.redis.hset(k.user(u), 'name', u, 'funds', funds)));
}

export async function giveItem(m: Market, seller: string, item: string): Promise<void> {
  await m.redis.sadd(keys(m).inventory(seller), item);
}

/** Up to `count` listed items, cheapest first, as [item, seller]. */
export async function cheapest(m: Market, count: number): Promise<[string, string][]> {
  const members = await m.redis.zrange(keys(m).market, 0, count - 1);
  return members.map((member) => {
    const dot = member.lastIndexOf('.');
    return [member.slice(0, dot), member.slice(dot + 1)];
  });
}

/** The books must balance: money is only moved, and every bought item is in exactly one buyer's inventory. */
export async function audit(m: Market, users: string[], buyers: string[], fundsEach: number, bought: number): Promise<string | null> {
  const k = keys(m);
  const funds = await Promise.all(users.map((u) => m.redis.hget(k.user(u), 'funds')));
  const total = funds.reduce((sum, f) => sum + Number(f), 0);
  if (total !== users.length * fundsEach) return `money was made or lost: ${total} instead of ${users.length * fundsEach}`;
  const owned = await Promise.all(buyers.map((b) => m.redis.scard(k.inventory(b))));
  const items = owned.reduce((a, b) => a + b, 0);
  if (items !== bought) return `${items} items in buyers' inventories, but ${bought} purchases`;
  return null;
}
