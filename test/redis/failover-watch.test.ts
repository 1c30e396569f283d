// The failover epoch on a real redis-server: which master a server may trust at start-up (the
// epoch record), and that a restart without persistence (a new run_id, every grant gone) is
// treated as a failover.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailoverWatch } from '../../src/redis/failover-watch';
import { startTestRedis, type TestRedis } from '../support/redis';
import { waitFor } from '../support/wait';

const QUARANTINE_MS = 400;
let redis: TestRedis;
let connection: Redis;
const watches: FailoverWatch[] = [];

beforeAll(async () => {
  redis = await startTestRedis();
  connection = new Redis(redis.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 50 });
  connection.on('error', () => {});
  await waitFor('the connection', () => connection.status === 'ready');
});
afterAll(async () => {
  watches.forEach((w) => w.close());
  connection.disconnect();
  await redis.cleanup();
});

function watch(epochKey: string): FailoverWatch {
  const w = new FailoverWatch({ redis: connection, watched: [connection], epochKey, quarantineMs: QUARANTINE_MS, pollMs: 50 });
  watches.push(w);
  return w;
}

const epochKey = () => `test:${randomBytes(4).toString('hex')}:epoch`;
const verified = (w: FailoverWatch) => waitFor('the master identified', () => w.isVerified, 5000);

describe('the epoch record', () => {
  it('without one, a starting server quarantines; once over, a later server trusts the record', async () => {
    const key = epochKey();
    const first = watch(key);
    await verified(first);
    expect(first.blocked()).toMatch(/no epoch record/);
    expect(first.resumeInMs()).toBeGreaterThan(QUARANTINE_MS / 2);
    expect(await connection.pttl(key)).toBeGreaterThan(0); // every key has a TTL
    await waitFor('the quarantine to end', () => first.blocked() === null, 5000);
    const later = watch(key);
    await verified(later);
    expect(later.blocked()).toBeNull();
    expect(later.lastFailoverAt).toBe(-Infinity);
  });

  it("a server starting during another one's quarantine waits out the rest of it", async () => {
    const key = epochKey();
    const first = watch(key);
    await verified(first);
    const second = watch(key);
    await verified(second);
    expect(second.blocked()).toMatch(/not over/);
    expect(second.resumeInMs()).toBeLessThanOrEqual(first.resumeInMs() + 50);
  });

  it('a record naming another master means a failover happened: quarantine in full', async () => {
    const key = epochKey();
    await connection.hset(key, 'master', 'another-run-id', 'until', '0');
    const w = watch(key);
    await verified(w);
    expect(w.blocked()).toMatch(/failed over before this server started/);
  });
});

it('a Redis restart without persistence is a new master: quarantine, and lastFailoverAt moves', async () => {
  const key = epochKey();
  const w = watch(key);
  await waitFor('the quarantine to end', () => w.isVerified && w.blocked() === null, 5000);
  const before = performance.now();
  await redis.restart();
  await waitFor('the new run_id noticed', () => w.lastFailoverAt > before, 10_000);
  await verified(w);
  expect(w.blocked()).toMatch(/failed over to another master \(or restarted\)/);
});
