// holdfast behind Redis Sentinel (one master, two replicas, three Sentinels, all real processes):
// the server follows the master the Sentinels promote, for commands and for wake-ups alike.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../support/client';
import { uniqueName } from '../support/redis';
import { MASTER_NAME, startTestSentinels, type TestSentinels } from '../support/sentinel';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

let group: TestSentinels;
let server: ServerProcess;
let client: TestClient;

beforeAll(async () => {
  // Three failovers in a row leave the last master without replicas: min-replicas-to-write 0 and
  // --sync-replicas 0 let it grant (what these tests follow is the master, not replica acknowledgement).
  group = await startTestSentinels({ nodeArgs: ['--min-replicas-to-write', '0'] });
  // Default safety with a 15 s lease cap: each failover's quarantine lasts 16 s, not 61; a held lock
  // outlives it because its Hold renews it (renewals go on through a quarantine; new grants wait).
  server = await startServerProcess(undefined, [
    '--redis-sentinels',
    group.sentinelAddrs.join(','),
    '--redis-master',
    MASTER_NAME,
    '--max-ttl-ms',
    '15000',
    '--default-ttl-ms',
    '5000',
    '--sync-replicas',
    '0',
  ]);
  client = connect(server.addr);
}, 60_000);
afterAll(async () => {
  client?.close();
  await server?.stop();
  await group?.cleanup();
});

/** Acquires `name` once Redis answers again; returns how long that took. */
async function grantedAgain(name: string, since: number): Promise<number> {
  await waitFor(
    `a grant of ${name} after the failover`,
    async () => (await client.acquire({ name, ttlMs: '5000' }).catch(() => ({ acquired: false }))).acquired,
    45_000,
    50,
  );
  return Date.now() - since;
}

describe('behind Redis Sentinel', () => {
  it('follows the master that the Sentinels promote after the master is killed, wake-ups included', async () => {
    const held = uniqueName('sen');
    const holding = client.hold({ name: held, ttlMs: '15000' });
    await holding.next((e) => !!e.acquired);
    const old = await group.master();
    const killedAt = Date.now();
    process.kill(old.pid, 'SIGKILL');
    const promoted = await group.failedOverFrom(old);
    expect(promoted.port).not.toBe(old.port);
    const window = await grantedAgain(uniqueName('sen'), killedAt);
    console.log(`Sentinel failover (master SIGKILLed): first grant ${window} ms after the kill`);

    // The replicated grant survived, and a waiter is woken through the new master's channel.
    expect((await client.acquire({ name: held })).acquired).toBe(false);
    const waiting = client.acquire({ name: held, waitTimeoutMs: '10000' });
    await waitFor('the waiter to queue', async () => (await client.inspect({ name: held })).waiters === 1);
    holding.call.cancel();
    expect((await waiting).acquired).toBe(true);
    expect(holding.events.some((e) => e.lost)).toBe(false);
  }, 90_000);

  it('follows the promoted master when the old one hangs (SIGSTOP) instead of dying', async () => {
    const held = uniqueName('sen');
    const holding = client.hold({ name: held, ttlMs: '15000' });
    await holding.next((e) => !!e.acquired);
    const old = await group.master();
    // Replication is ordered: once a later write of ours is on a replica, the grant is too.
    const direct = group.client(old);
    await direct.set(uniqueName('marker'), '1', 'PX', 10_000);
    expect(Number(await direct.call('WAIT', '1', '5000'))).toBeGreaterThanOrEqual(1);
    const stoppedAt = Date.now();
    process.kill(old.pid, 'SIGSTOP');
    try {
      await group.failedOverFrom(old);
      const window = await grantedAgain(uniqueName('sen'), stoppedAt);
      console.log(`Sentinel failover (master SIGSTOPped): first grant ${window} ms after the stop`);
      expect((await client.acquire({ name: held })).acquired).toBe(false);
    } finally {
      process.kill(old.pid, 'SIGCONT');
    }
    // The old master comes back as a replica; the server stays with the new one.
    await waitFor(
      'the old master to rejoin as a replica',
      async () => /role:slave/.test(String(await direct.info('replication').catch(() => ''))),
      30_000,
      200,
    );
    expect(holding.events.some((e) => e.lost)).toBe(false);
    holding.call.cancel();
    await waitFor('the hold given back', async () => (await client.acquire({ name: held, ttlMs: '1000' })).acquired, 10_000, 100);
  }, 120_000);

  it('follows a SENTINEL FAILOVER, where the old master lives on as a replica', async () => {
    const old = await group.master();
    const sentinel = group.client(group.sentinels[1]);
    const startedAt = Date.now();
    await waitFor(
      'Sentinel to accept the failover',
      async () => (await sentinel.call('SENTINEL', 'FAILOVER', MASTER_NAME).catch(() => null)) === 'OK',
      20_000,
      200,
    );
    await group.failedOverFrom(old);
    const window = await grantedAgain(uniqueName('sen'), startedAt);
    console.log(`SENTINEL FAILOVER: first grant ${window} ms after it was asked for`);
    const name = uniqueName('sen');
    const grant = await client.acquire({ name, ttlMs: '5000' });
    expect(grant.acquired).toBe(true);
    expect((await client.release({ name, token: grant.token })).released).toBe(true);
  }, 90_000);
});
