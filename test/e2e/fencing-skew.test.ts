// Fencing tokens across a Redis restart without persistence (a failover in the small: every
// grant is lost) when the new Redis's clock is behind the old one's, with real shifted clocks
// (test/support/skewed-clock.c). A token is max(last + 1, Redis TIME in µs) and `last` is lost
// with the grants, so the next token comes from the new clock alone. The README's bound: with
// --failover-quarantine tokens still rise while the new clock is behind by less than the
// quarantine. Checked on both sides: 40% of the quarantine behind, tokens rise; three times the
// quarantine behind (the negative control), the token goes back, as the bound says it may.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/redis/embedded';
import { connect, type TestClient } from '../support/client';
import { healthStatus } from '../support/health';
import { uniqueName } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { skewedClockEnv } from '../support/skewed-clock';
import { waitFor } from '../support/wait';

const MAX_TTL_MS = 2000;
const QUARANTINE_MS = MAX_TTL_MS + 500;

let dataDir: string;
let redis: EmbeddedRedis;
let server: ServerProcess;
let client: TestClient;

/** (Re)starts redis-server on the same port, empty, with its clock shifted by `skewMs`. */
async function startRedis(skewMs: number, port?: number): Promise<void> {
  redis = await startEmbeddedRedis({ dataDir, port, args: ['--save', ''], env: skewedClockEnv(skewMs) });
}

async function redisTimeUs(): Promise<bigint> {
  const { Redis } = await import('ioredis');
  const c = new Redis(redis.url);
  try {
    const [s, us] = await c.time();
    return BigInt(s) * 1_000_000n + BigInt(us);
  } finally {
    c.disconnect();
  }
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'holdfast-skew-'));
  await startRedis(0);
  server = await startServerProcess(redis.url, [
    '--failover-quarantine',
    '--max-ttl-ms',
    String(MAX_TTL_MS),
    '--quarantine-margin-ms',
    '500',
    '--default-ttl-ms',
    '1000',
  ]);
  client = connect(server.addr);
  await waitFor('health SERVING after the start-up quarantine', async () => (await healthStatus(server.addr)) === 'SERVING', 20_000, 50);
}, 60_000);
afterAll(async () => {
  client?.close();
  await server?.stop();
  await redis?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Restarts Redis empty with its clock `skewMs` off real time; returns the next token of `name`. */
async function tokenAfterRestart(name: string, skewMs: number): Promise<bigint> {
  const port = redis.port;
  await redis.stop();
  await startRedis(skewMs, port);
  const skewSeen = (await redisTimeUs()) - BigInt(Date.now()) * 1000n;
  // The shifted clock is real: Redis TIME is off by what was asked (within 200 ms of test overhead).
  expect(Number(skewSeen / 1000n)).toBeGreaterThan(skewMs - 200);
  expect(Number(skewSeen / 1000n)).toBeLessThan(skewMs + 200);
  // While the server is still reconnecting, a grant is UNAVAILABLE at once (Redis away): ask again.
  const next = (await waitFor(
    'a waiting grant after the restart',
    () =>
      client
        .acquire({ name, ttlMs: String(MAX_TTL_MS), waitTimeoutMs: '30000' })
        .catch((err: { code?: number }) => (err.code === status.UNAVAILABLE ? undefined : Promise.reject(err))),
    40_000,
    50,
  ))!;
  expect(next.acquired).toBe(true);
  return BigInt(next.fencingToken);
}

it('tokens rise across a restart onto a clock behind by less than the quarantine, and can go back beyond it', async () => {
  const name = uniqueName('skew');
  const first = await client.acquire({ name, ttlMs: String(MAX_TTL_MS) });
  expect(first.acquired).toBe(true);

  // 40% of the quarantine behind: the quarantine's wait covers it.
  const within = await tokenAfterRestart(name, -0.4 * QUARANTINE_MS);
  expect(within).toBeGreaterThan(BigInt(first.fencingToken));

  // Negative control: three quarantines further behind than that clock. Nothing in Redis
  // remembers the last token, so it goes back: the bound is real, and this test can tell.
  const beyond = await tokenAfterRestart(name, -0.4 * QUARANTINE_MS - 3 * QUARANTINE_MS);
  expect(beyond).toBeLessThan(within);
  console.log(
    `fencing across restarts: ${first.fencingToken} -> ${within} (clock ${0.4 * QUARANTINE_MS} ms behind, quarantine ${QUARANTINE_MS} ms) -> ` +
      `${beyond} (clock ${3 * QUARANTINE_MS} ms further behind: went back by ${(within - beyond) / 1000n} ms)`,
  );
}, 90_000);
