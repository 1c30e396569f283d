// Issue 22's guarantee with no safety flag: whatever Redis does (restart without its data, a
// crash of the embedded one with its server, a failover), no server grants a lock while a client
// SDK may still count an earlier lease of it valid. The opt-out is the negative control.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient } from '../../clients/ts/index';
import { connect } from '../support/client';
import { healthStatus } from '../support/health';
import { startTestRedis, uniqueName, type TestRedis } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

const QUARANTINE_MS = 61_000; // the default --max-ttl-ms (60 s) + --quarantine-margin-ms (1 s)
/** Time for the servers to notice the restart and the waiter's grant to travel, on a busy machine. */
const SLACK_MS = 8_000;

let dir: string;
const servers: ServerProcess[] = [];
const redises: TestRedis[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'holdfast-safe-defaults-'));
});
afterAll(async () => {
  // SIGTERM, so that a server on its embedded Redis stops that child too (a SIGKILL would orphan it).
  await Promise.all(servers.map((s) => s.stop('SIGTERM', 5000)));
  await Promise.all(redises.map((r) => r.cleanup()));
  rmSync(dir, { recursive: true, force: true });
});

async function serve(redisUrl: string | undefined, args: string[] = [], spawnOptions = {}): Promise<ServerProcess> {
  const server = await startServerProcess(redisUrl, args, {}, spawnOptions);
  servers.push(server);
  return server;
}

/**
 * Two servers with the given flags on one Redis without persistence; client A takes a lock (ttl
 * 15 s) through the SDK; Redis is SIGKILLed and restarted empty; client B waits for the lock on
 * the other server. Resolves with when B was granted and when A's SDK said A's lease could end.
 */
async function restartScenario(args: string[]): Promise<{ grantedAt: number; aDeadline: number; restartedAt: number }> {
  const redis = await startTestRedis();
  redises.push(redis);
  const [first, second] = await Promise.all([serve(redis.url, args), serve(redis.url, args)]);
  const a = new HoldfastClient(first.addr);
  const b = new HoldfastClient(second.addr);
  try {
    const name = uniqueName('restart');
    const lock = await a.acquire(name, { ttlMs: 15_000 });
    await redis.restart('SIGKILL');
    const restartedAt = Date.now();
    // Redis may still be reconnecting: UNAVAILABLE then, and the waiter asks again, as a client would.
    const granted = await waitFor(
      "B's grant",
      () =>
        b
          .acquire(name, { ttlMs: 5_000, waitMs: QUARANTINE_MS + SLACK_MS * 2 })
          .catch((err: { code?: number }) => (err.code === status.UNAVAILABLE ? undefined : Promise.reject(err))),
      QUARANTINE_MS + SLACK_MS * 2,
      100,
    );
    const grantedAt = Date.now();
    await granted!.release().catch(() => {});
    return { grantedAt, aDeadline: lock.expiresAt, restartedAt };
  } finally {
    a.close();
    b.close();
  }
}

describe('one Redis without persistence, SIGKILLed and restarted empty while a lock is held', () => {
  it('with default flags: nobody else is granted the lock before the holder SDK deadline; the waiter is granted within the quarantine after', async () => {
    const r = await restartScenario([]);
    expect(r.grantedAt).toBeGreaterThanOrEqual(r.aDeadline);
    expect(r.grantedAt - r.restartedAt).toBeLessThan(QUARANTINE_MS + SLACK_MS);
    console.log(`default flags: granted ${r.grantedAt - r.restartedAt} ms after the restart, ${r.grantedAt - r.aDeadline} ms after A's lease could end`);
  }, 150_000);

  it('with --unsafe-no-failover-safety (the negative control): the lock is granted again while the holder still counts its lease valid', async () => {
    const r = await restartScenario(['--unsafe-no-failover-safety']);
    expect(r.grantedAt).toBeLessThan(r.aDeadline);
    console.log(`unsafe: granted ${r.grantedAt - r.restartedAt} ms after the restart, ${r.aDeadline - r.grantedAt} ms before A's lease could end`);
  }, 150_000);
});

describe('the embedded Redis', () => {
  it('serves at once on a new data dir, and keeps every lease when holdfast serve and its Redis are SIGKILLed together', async () => {
    const dataDir = join(dir, 'embedded');
    const started = await serve(undefined, ['--data-dir', dataDir], { detached: true });
    const port = started.port;
    const a = new HoldfastClient(started.addr);
    const name = uniqueName('embedded');
    const lock = await a.acquire(name, { ttlMs: 15_000 }); // at once: a new data dir holds no lease
    expect(await healthStatus(started.addr)).toBe('SERVING');
    process.kill(-started.pid, 'SIGKILL'); // the server and its redis-server child, as a crash or an OOM kill of the group
    await started.exited;
    const again = await serve(undefined, ['--data-dir', dataDir], { detached: true, port });
    const b = connect(again.addr);
    try {
      // Every acknowledged write was fsynced: A's lease survived, so A renews it and B is refused.
      await waitFor(
        'the restarted server to renew the lease',
        async () =>
          await lock.renew(15_000).then(
            () => true,
            () => false,
          ),
        20_000,
        200,
      );
      expect((await b.acquire({ name, ttlMs: '5000' })).acquired).toBe(false);
      // Nothing to wait out: another lock is granted at once.
      expect((await b.acquire({ name: uniqueName('other'), ttlMs: '5000' })).acquired).toBe(true);
      expect(again.logs.some((l) => l.includes('"holdsEveryGrant":true'))).toBe(true);
      expect(again.logs.some((l) => l.includes('quarantine: no new grants'))).toBe(false);
      await lock.release();
      expect((await b.acquire({ name, ttlMs: '5000' })).acquired).toBe(true);
    } finally {
      a.close();
      b.close();
      process.kill(-again.pid, 'SIGKILL');
    }
  }, 120_000);
});

describe('a Hold whose call deadline passes', () => {
  it('frees its lock once the holder has stopped counting on it, not when its 30 s lease runs out', async () => {
    const redis = await startTestRedis();
    redises.push(redis);
    const server = await serve(redis.url);
    const holder = connect(server.addr);
    const waiter = connect(server.addr);
    try {
      const name = uniqueName('deadline');
      const hold = holder.hold({ name, ttlMs: '30000' }, 2_000);
      await hold.next((e) => !!e.acquired);
      const waiting = waiter.acquire({ name, ttlMs: '5000', waitTimeoutMs: '20000' }).then((r) => ({ ...r, at: Date.now() }));
      const ended = await hold.ended;
      const overAt = Date.now(); // the holder's side reported the call over
      expect(ended.code).toBe(status.DEADLINE_EXCEEDED);
      const granted = await waiting;
      expect(granted.acquired).toBe(true);
      expect(granted.at).toBeGreaterThanOrEqual(overAt - 50); // never while the holder's call ran (50 ms: the two callbacks' order)
      expect(granted.at - overAt).toBeLessThan(5_000); // not the 30 s lease
    } finally {
      holder.close();
      waiter.close();
    }
  }, 60_000);
});

describe('Redis trouble as a user meets it', () => {
  it('refuses a --redis that is not a Redis URL, naming the option', async () => {
    await expect(serve('localhost:6379')).rejects.toThrow(
      /invalid setting --redis: must be a Redis URL such as redis:\/\/127\.0\.0\.1:6379.*got "localhost:6379"/,
    );
  });

  it('listens at once with an unreachable Redis: NOT_SERVING, one log line with the address and the cause, UNAVAILABLE in words', async () => {
    const server = await serve('redis://127.0.0.1:1');
    expect(await healthStatus(server.addr)).toBe('NOT_SERVING');
    const client = connect(server.addr);
    try {
      const err = await client.acquire({ name: uniqueName(), ttlMs: '5000' }).catch((e: { code: number; details: string }) => e);
      expect((err as { code: number }).code).toBe(status.UNAVAILABLE);
      expect((err as { details: string }).details).toMatch(
        /^lock "lock-[0-9a-f]+": Redis at 127\.0\.0\.1:1 is unavailable: connection refused \(ECONNREFUSED\): nothing listens on that port$/,
      );
    } finally {
      client.close();
    }
    const lines = server.logs.filter((l) => l.includes('cannot reach Redis at 127.0.0.1:1'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]).cause).toBe('connection refused (ECONNREFUSED): nothing listens on that port');
    for (const l of server.logs) expect(l).not.toMatch(/enableOfflineQueue|Stream isn't writeable/);
  });

  it('names an unknown host as such', async () => {
    const server = await serve('redis://no-such-host.invalid:6379');
    await waitFor('the cause to be logged', () =>
      server.logs.some((l) => l.includes('cannot reach Redis at no-such-host.invalid:6379: host name not found (ENOTFOUND)')),
    );
  });
});

describe('an embedded data dir that may have lost grants', () => {
  it('is quarantined: one written by a Redis that did not fsync every write (an older holdfast)', async () => {
    const dataDir = join(dir, 'older');
    const { startEmbeddedRedis } = await import('../../src/redis/embedded');
    const older = await startEmbeddedRedis({ dataDir: join(dataDir, 'redis'), args: ['--appendonly', 'no', '--save', '60 1'] });
    const { Redis } = await import('ioredis');
    const c = new Redis(older.url);
    await c.set('hf:something', '1');
    await c.save();
    c.disconnect();
    await older.stop();
    const server = await serve(undefined, ['--data-dir', dataDir]);
    expect(server.logs.some((l) => l.includes('"holdsEveryGrant":false'))).toBe(true);
    await waitFor('the quarantine to be logged', () => server.logs.some((l) => l.includes('quarantine: no new grants for 61 s')));
    expect(await healthStatus(server.addr)).toBe('NOT_SERVING');
  });
});
