// npm run example:market: Redis in Action's marketplace benchmark (its tables 6-1 to 6-3) with
// holdfast locks. Each version runs for a bounded time with 1x1, 5x1 and 5x5 sellers x buyers:
// sellers keep making an item and listing it, buyers keep buying the cheapest listed item.
// Prints the book's columns (listed, bought, purchase retries) and purchase latency p50/p99, and
// audits the books after every run (money only moves; each bought item is in one inventory).
// Each version's operations (listed + bought) are also given as a ratio to the book's own Redis
// lock on the same names ('book'), measured in the same run.
// --seconds=N per run (default 10); --short: 1 s runs (CI).
import { Redis } from 'ioredis';
import { HoldfastClient } from '../../clients/ts/index';
import { fixed, markdownTable, setting } from '../../bench/support';
import { check, quantile, run, SHORT, startStack } from '../support';
import { audit, cheapest, giveItem, listItem, purchaseItem, setUp, type Market, type Version } from './market';

const SECONDS = SHORT ? 1 : setting('seconds', 'MARKET_SECONDS', 10);
const SHAPES: [number, number][] = [
  [1, 1],
  [5, 1],
  [5, 5],
];
const ALL_VERSIONS: Version[] = ['watch', 'book', 'coarse', 'fine'];
// MARKET_VERSIONS=book,fine runs only those (the book's is always run: the ratios need it).
const VERSIONS = ALL_VERSIONS.filter((v) => v === 'book' || !process.env.MARKET_VERSIONS || process.env.MARKET_VERSIONS.split(',').includes(v));
const FUNDS = 1_000_000_000;

interface Tally {
  listed: number;
  bought: number;
  retries: number;
  latencies: number[];
}

async function runOnce(version: Version, sellers: number, buyers: number, redisUrl: string, addr: string): Promise<Tally> {
  const prefix = `market:${version}:${sellers}x${buyers}:${process.pid}`;
  const sellerIds = Array.from({ length: sellers }, (_, i) => `s${i}`);
  const buyerIds = Array.from({ length: buyers }, (_, i) => `b${i}`);
  // WATCH is per connection: every worker has its own, and its own holdfast client.
  const open = (): Market => ({ prefix, redis: new Redis(redisUrl), locks: new HoldfastClient(addr) });
  const setup = open();
  await setUp(setup, [...sellerIds, ...buyerIds], FUNDS);
  const tally: Tally = { listed: 0, bought: 0, retries: 0, latencies: [] };
  const until = performance.now() + SECONDS * 1000;
  const seller = async (id: string) => {
    const m = open();
    for (let n = 0; performance.now() < until; n++) {
      const item = `${id}-item${n}`;
      await giveItem(m, id, item);
      if ((await listItem(version, m, item, id, 1 + (n % 100))).listed) tally.listed++;
    }
    return m;
  };
  const buyer = async (id: string) => {
    const m = open();
    while (performance.now() < until) {
      const choices = await cheapest(m, 5);
      if (choices.length === 0) continue;
      const [item, sellerId] = choices[Math.floor(Math.random() * choices.length)];
      const start = performance.now();
      const { bought, retries } = await purchaseItem(version, m, id, item, sellerId);
      tally.retries += retries;
      if (bought) {
        tally.bought++;
        tally.latencies.push(performance.now() - start);
      }
    }
    return m;
  };
  const markets = await Promise.all([...sellerIds.map(seller), ...buyerIds.map(buyer)]);
  const problem = await audit(setup, [...sellerIds, ...buyerIds], buyerIds, FUNDS, tally.bought);
  for (const m of [setup, ...markets]) {
    m.redis.disconnect();
    m.locks.close();
  }
  if (problem) throw new Error(`${version} ${sellers}x${buyers}: ${problem}`);
  return tally;
}

run(async () => {
  const stack = await startStack(1);
  const rows: string[][] = [];
  try {
    for (const [sellers, buyers] of SHAPES) {
      const tallies = new Map<Version, Tally>();
      for (const version of VERSIONS) tallies.set(version, await runOnce(version, sellers, buyers, stack.redis.url, stack.servers[0].addr));
      const ops = (t: Tally) => t.listed + t.bought;
      const book = ops(tallies.get('book')!);
      for (const [version, t] of tallies) {
        const ms = (q: number) => (t.latencies.length ? fixed(quantile(t.latencies, q), 1) : '-');
        const vsBook = book > 0 ? `${fixed(ops(t) / book, 2)}x` : '-';
        rows.push([`${sellers} x ${buyers}`, version, String(t.listed), String(t.bought), String(t.retries), ms(0.5), ms(0.99), vsBook]);
        console.error(`${version} ${sellers}x${buyers}: listed ${t.listed}, bought ${t.bought}, retries ${t.retries}`);
        check(t.listed > 0 && t.bought > 0, `${version} ${sellers}x${buyers} listed and sold items, and the books balance`);
      }
    }
  } finally {
    await stack.stop();
  }
  console.log(`\n${SECONDS} s per run, one holdfast server and one redis-server on this machine\n`);
  console.log(
    markdownTable(['sellers x buyers', 'version', 'listed', 'bought', 'purchase retries', 'purchase p50 ms', 'purchase p99 ms', 'operations vs book'], rows),
  );
});
