// The lost write, made deterministic on real processes: the Sentinel-watched master acknowledges
// a grant that no replica has (replicas stopped, their links cut), is killed, and a replica that
// never saw the grant is promoted. With --sync-replicas the grant is never reported (WAIT finds
// no replica, the grant is given back, the caller gets UNAVAILABLE), so nobody holds the lock
// twice; without it (the negative control) a second client is granted the same lock while the
// first client's lease still runs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { LostReason, type AcquireResponse } from '../../gen/holdfast/v1/lock';
import { startEmbeddedRedis } from '../../src/redis/embedded';
import { connect, type TestClient } from '../support/client';
import { startTestRedis, uniqueName } from '../support/redis';
import { MASTER_NAME, startTestSentinels } from '../support/sentinel';
import { startServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

const TTL_MS = 20_000;

/** A client's conservative view of a grant: from when its reply arrived to when the lease may end. */
interface Window {
  fencingToken: bigint;
  from: number;
  to: number;
}

/** Calls `call` until it answers with anything but UNAVAILABLE (what it answers while a failover runs). */
async function onceAvailable<T>(what: string, call: () => Promise<T>): Promise<T> {
  const answered = await waitFor(
    what,
    () =>
      call().then(
        (value) => ({ value }),
        (err: { code?: number }) => {
          if (err.code !== status.UNAVAILABLE) throw err;
          return null;
        },
      ),
    30_000,
    50,
  );
  return answered!.value;
}

async function acquireAfterFailover(client: TestClient, name: string): Promise<{ reply: AcquireResponse; window: Window }> {
  let sentAt = 0;
  const reply = await onceAvailable(`a reply for ${name} after the failover`, () => {
    sentAt = Date.now();
    return client.acquire({ name, ttlMs: String(TTL_MS) });
  });
  return { reply, window: { fencingToken: BigInt(reply.fencingToken || 0), from: Date.now(), to: sentAt + TTL_MS } };
}

async function lostWriteScenario(syncArgs: string[]) {
  // min-replicas-to-write 0, the misconfiguration that lets a master cut off from its replicas grant.
  const group = await startTestSentinels({ nodeArgs: ['--min-replicas-to-write', '0'] });
  const args = ['--redis-sentinels', group.sentinelAddrs.join(','), '--redis-master', MASTER_NAME, ...syncArgs];
  const servers = await Promise.all([startServerProcess(undefined, args), startServerProcess(undefined, args)]);
  const [a, b] = servers.map((s) => connect(s.addr));
  try {
    // A grant every replica has: it must survive the failover. (On a busy machine a replica may
    // miss the short sync timeout once: that grant is given back and answered UNAVAILABLE; ask again.)
    const kept = uniqueName('kept');
    const keptGrant = await onceAvailable('a confirmed grant', () => a.acquire({ name: kept, ttlMs: String(TTL_MS) }));
    expect(keptGrant.acquired).toBe(true);

    const name = uniqueName('lost');
    const master = await group.master();
    const replicas = await group.cutReplicas(master);
    const sentAt = Date.now();
    const first = await a.acquire({ name, ttlMs: String(TTL_MS) }).then(
      (reply) => ({ reply, code: status.OK }),
      (err: { code: number }) => ({ reply: undefined, code: err.code }),
    );
    const firstWindow = first.reply?.acquired ? { fencingToken: BigInt(first.reply.fencingToken), from: Date.now(), to: sentAt + TTL_MS } : undefined;
    process.kill(master.pid, 'SIGKILL');
    replicas.forEach((r) => process.kill(r.pid, 'SIGCONT'));
    const failedAt = Date.now();
    await group.failedOverFrom(master);

    const second = await acquireAfterFailover(b, name);
    const keptAgain = await onceAvailable('the surviving grant through the second server', () => b.acquire({ name: kept }));
    // After the failover: release the surviving grant and take it again, for its next fencing token.
    await onceAvailable('the release through the first server', () => a.release({ name: kept, token: keptGrant.token }));
    const keptNext = await b.acquire({ name: kept, ttlMs: '5000' });
    return { first, firstWindow, second, keptGrant, keptAgain, keptNext, failedAt };
  } finally {
    a.close();
    b.close();
    await Promise.all(servers.map((s) => s.stop()));
    await group.cleanup();
  }
}

function overlap(x: Window | undefined, y: Window): boolean {
  return !!x && x.from < y.to && y.from < x.to;
}

describe('a grant the master acknowledged and no replica has, then a failover', () => {
  it('with --sync-replicas 1: is never reported, so no two clients hold the lock, and fencing tokens keep rising', async () => {
    // min-replicas-to-write stays 0 (allowed explicitly): WAIT alone must prevent the double grant.
    const r = await lostWriteScenario(['--sync-replicas', '1', '--sync-timeout-ms', '300', '--unsafe-no-failover-safety', '--allow-min-replicas-zero']);
    expect(r.first.code).toBe(status.UNAVAILABLE);
    expect(r.firstWindow).toBeUndefined();
    expect(r.second.reply.acquired).toBe(true);
    expect(overlap(r.firstWindow, r.second.window)).toBe(false);
    expect(r.keptAgain.acquired).toBe(false); // the acknowledged grant survived
    expect(r.keptNext.acquired).toBe(true);
    expect(BigInt(r.keptNext.fencingToken)).toBeGreaterThan(BigInt(r.keptGrant.fencingToken));
  }, 90_000);

  it('without it (negative control): the same scenario grants the lock twice', async () => {
    const r = await lostWriteScenario(['--unsafe-no-failover-safety']);
    expect(r.first.code).toBe(status.OK);
    expect(r.first.reply?.acquired).toBe(true);
    expect(r.second.reply.acquired).toBe(true);
    expect(overlap(r.firstWindow, r.second.window)).toBe(true);
    console.log(
      `negative control: a second client was granted the lock ${r.second.window.from - r.firstWindow!.from} ms after the first, whose lease runs ${TTL_MS} ms`,
    );
  }, 90_000);
});

describe('the start-up check of --sync-replicas', () => {
  it("refuses to start while the master's min-replicas-to-write is 0, unless told to allow it", async () => {
    const redis = await startTestRedis();
    try {
      await expect(startServerProcess(redis.url, ['--sync-replicas', '1'])).rejects.toThrow(
        /min-replicas-to-write is 0.*--unsafe-no-failover-safety --allow-min-replicas-zero/,
      );
      await expect(startServerProcess(redis.url, ['--sync-replicas', '1', '--allow-min-replicas-zero'])).rejects.toThrow(
        /allow-min-replicas-zero.*needs --unsafe-no-failover-safety/,
      );
      const allowed = await startServerProcess(redis.url, ['--sync-replicas', '1', '--unsafe-no-failover-safety', '--allow-min-replicas-zero']);
      expect(allowed.logs.some((line) => line.includes('min-replicas-to-write is 0'))).toBe(true);
      expect(allowed.logs.some((line) => line.includes('fewer replicas than asked'))).toBe(true);
      await allowed.stop();
      await redis.client.config('SET', 'min-replicas-to-write', '1');
      const checked = await startServerProcess(redis.url, ['--sync-replicas', '1']);
      await checked.stop();
    } finally {
      await redis.cleanup();
    }
  });
});

describe('--sync-replicas while the only replica is unreachable', () => {
  it('answers grants and renewals UNAVAILABLE, ends Holds as lost, and keeps releases and reads prompt', async () => {
    const master = await startTestRedis();
    const replica = await startEmbeddedRedis({
      dataDir: mkdtempSync(join(tmpdir(), 'holdfast-replica-')),
      args: ['--save', '', '--replicaof', '127.0.0.1', String(master.port)],
    });
    const server = await startServerProcess(master.url, [
      '--sync-replicas',
      '1',
      '--unsafe-no-failover-safety',
      '--allow-min-replicas-zero',
      '--sync-timeout-ms',
      '500',
    ]);
    const client = connect(server.addr);
    try {
      await waitFor('the replica online', async () => /state=online/.test(String(await master.client.info('replication'))), 10_000, 50);
      const held = uniqueName('sync-hold');
      const hold = client.hold({ name: held, ttlMs: '1500' });
      await hold.next((e) => !!e.renewed);
      const other = uniqueName('sync-other');
      const grant = await client.acquire({ name: other, ttlMs: '10000' });
      expect(grant.acquired).toBe(true);

      process.kill(replica.pid, 'SIGSTOP');
      await master.client.call('CLIENT', 'KILL', 'TYPE', 'replica');
      const lost = await hold.next((e) => !!e.lost);
      expect(lost.lost!.code).toBe(LostReason.LOST_REASON_BACKEND_UNAVAILABLE);
      await expect(client.renew({ name: other, token: grant.token, ttlMs: '10000' })).rejects.toMatchObject({ code: status.UNAVAILABLE });
      await expect(client.acquire({ name: uniqueName('sync-new') })).rejects.toMatchObject({ code: status.UNAVAILABLE });
      // Releases and reads do not queue behind the WAITs that wait for the missing replica.
      const started = Date.now();
      expect((await client.release({ name: other, token: grant.token })).released).toBe(true);
      expect((await client.inspect({ name: other })).holders).toEqual([]);
      expect(Date.now() - started).toBeLessThan(1000);

      process.kill(replica.pid, 'SIGCONT');
      await waitFor(
        'grants confirmed again',
        async () => (await client.acquire({ name: uniqueName('sync-back') }).catch(() => ({ acquired: false }))).acquired,
        20_000,
        100,
      );
    } finally {
      client.close();
      await server.stop();
      process.kill(replica.pid, 'SIGCONT');
      await replica.stop();
      rmSync(replica.dataDir, { recursive: true, force: true });
      await master.cleanup();
    }
  }, 60_000);
});
