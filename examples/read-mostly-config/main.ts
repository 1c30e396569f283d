// Read-mostly configuration guarded by a shared/exclusive lock. Many readers take the lock
// shared and read the configuration (two Redis keys that must agree); one writer takes it
// exclusive now and then and rewrites both keys, one after the other. Shows that
// - readers never block each other (many hold the shared lock at once),
// - no reader ever sees a half-written configuration (the writer excludes them),
// - the writer is not starved although readers hold the lock all the time: the queue is FIFO,
//   so readers that come after a waiting writer queue behind it.
// --short: 2 s (CI); default 10 s.
import { HoldfastClient } from '../../clients/ts/index';
import { fixed } from '../../bench/support';
import { check, quantile, run, SHORT, sleep, startStack } from '../support';

const SECONDS = SHORT ? 2 : 10;
const READERS = 8;
const WRITE_EVERY_MS = 200;
/** A writer waits behind the readers holding the lock when it asks, never behind later ones. */
const READ_MS = 20;
const WRITER_WAIT_BOUND_MS = 2000;

run(async () => {
  const stack = await startStack(2);
  const redis = stack.redis.client;
  const lock = `config-${process.pid}`;
  const [version, checksum] = [`${lock}:version`, `${lock}:checksum`];
  await redis.mset(version, '0', checksum, 'sum-0');
  const clients = stack.servers.map((s) => new HoldfastClient(s.addr));
  const until = performance.now() + SECONDS * 1000;
  let reading = 0;
  let mostAtOnce = 0;
  let reads = 0;
  let torn = 0;
  const writerWaits: number[] = [];
  try {
    const reader = async (i: number) => {
      const client = clients[i % clients.length];
      while (performance.now() < until) {
        const held = await client.acquire(lock, { shared: true, ttlMs: 5000, waitMs: 10_000 });
        mostAtOnce = Math.max(mostAtOnce, ++reading);
        const [v, sum] = await redis.mget(version, checksum);
        if (sum !== `sum-${v}`) torn++;
        reads++;
        await sleep(READ_MS); // using the configuration
        reading--;
        await held.release();
      }
    };
    const writer = async () => {
      const client = clients[0];
      for (let n = 1; performance.now() < until; n++) {
        await sleep(WRITE_EVERY_MS);
        const asked = performance.now();
        const held = await client.acquire(lock, { ttlMs: 5000, waitMs: 10_000 });
        writerWaits.push(performance.now() - asked);
        // Two writes that a reader must never see apart.
        await redis.set(version, String(n));
        await sleep(5);
        await redis.set(checksum, `sum-${n}`);
        await held.release();
      }
    };
    await Promise.all([writer(), ...Array.from({ length: READERS }, (_, i) => reader(i))]);
  } finally {
    clients.forEach((c) => c.close());
    await stack.stop();
  }
  const p50 = fixed(quantile(writerWaits, 0.5), 1);
  const worst = fixed(Math.max(...writerWaits), 1);
  console.log(`${reads} reads by ${READERS} readers, ${writerWaits.length} writes in ${SECONDS} s; writer waited p50 ${p50} ms, at most ${worst} ms`);
  check(mostAtOnce > 1, `readers do not block each other (${mostAtOnce} held the shared lock at once)`);
  check(torn === 0, 'no reader saw a half-written configuration');
  check(
    writerWaits.length >= (SECONDS * 1000) / (WRITE_EVERY_MS + WRITER_WAIT_BOUND_MS) && Math.max(...writerWaits) < WRITER_WAIT_BOUND_MS,
    `the writer is not starved (every write waited under ${WRITER_WAIT_BOUND_MS} ms)`,
  );
});
