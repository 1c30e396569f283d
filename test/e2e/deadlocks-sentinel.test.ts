// Deadlock detection behind Redis Sentinel (docs/deadlocks.md, Topologies): a real master, two
// replicas and three Sentinels (test/support/sentinel.ts), two holdfast servers following them
// with --deadlock-timeout-ms 500. A two-owner cycle across the two servers is ended, naming both
// locks, and the other owner is granted; after a SENTINEL FAILOVER the same servers, on the
// promoted master, find and end a new cycle as well.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitsKey } from '../../src/engine/keys';
import { connect, type TestClient } from '../support/client';
import { closeTwoOwnerCycle } from '../support/deadlocks';
import { uniqueName } from '../support/redis';
import { MASTER_NAME, startTestSentinels, type TestSentinels } from '../support/sentinel';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

const TIMEOUT_MS = 500;
/** As in deadlocks.test.ts: room for a busy 2-core machine beyond a walk of a few ms. */
const BOUND_MS = 1500;
/** A short lease cap keeps the failover's quarantine short (the cap plus 1 s). */
const MAX_TTL_MS = 4000;

let group: TestSentinels;
let servers: ServerProcess[];
let clients: TestClient[];

beforeAll(async () => {
  group = await startTestSentinels();
  const args = [
    '--redis-sentinels',
    group.sentinelAddrs.join(','),
    '--redis-master',
    MASTER_NAME,
    '--deadlock-timeout-ms',
    String(TIMEOUT_MS),
    '--max-ttl-ms',
    String(MAX_TTL_MS),
    '--default-ttl-ms',
    String(MAX_TTL_MS),
  ];
  servers = await Promise.all([startServerProcess(undefined, args), startServerProcess(undefined, args)]);
  clients = servers.map((s) => connect(s.addr));
}, 60_000);
afterAll(async () => {
  clients?.forEach((c) => c.close());
  await Promise.all((servers ?? []).map((s) => s.stop()));
  await group?.cleanup();
});

const waiters = async (name: string) => (await clients[0].inspect({ name })).waiters;
/** A Hold stream of `name` for `owner` (renewed by its server, so no lease runs out meanwhile), once granted. */
async function holding(c: TestClient, name: string, owner: string) {
  const hold = c.hold({ name, owner, ttlMs: String(MAX_TTL_MS) });
  await hold.next((e) => !!e.acquired);
  return hold;
}

/**
 * o1 holds a (server 0) and o2 holds b (server 1); o1 waits for b on server 0, then o2 for a on
 * server 1. The youngest wait, o2's, ends ABORTED naming both locks; o1 is granted b once o2
 * gives it back. Nothing is left behind.
 */
async function cycleIsEnded(): Promise<void> {
  const logged = servers.map((s) => s.logs.length);
  const { a, b, o1, o2, held, w1 } = await closeTwoOwnerCycle([clients[0], clients[1]], holding, waiters, {
    ttlMs: MAX_TTL_MS,
    boundMs: TIMEOUT_MS + BOUND_MS,
  });
  const [a1, b2] = held;
  // o2 gives back b: o1 is granted it.
  b2.call.cancel();
  const second = await w1;
  expect(second.error).toBeNull();
  expect(second.granted).toBe(true);
  await clients[0].release({ name: b, token: second.token });
  a1.call.cancel();
  await waitFor('both locks free', async () => {
    const [ia, ib] = await Promise.all([clients[0].inspect({ name: a }), clients[0].inspect({ name: b })]);
    return ia.holders.length + ib.holders.length + ia.waiters + ib.waiters === 0;
  });
  const master = group.client(await group.master());
  await waitFor('the wait records to go', async () => (await master.hlen(waitsKey('hf', o1))) + (await master.hlen(waitsKey('hf', o2))) === 0);
  // The server whose walk ended it logged one warn line with the cycle.
  const warned = servers.filter((s, i) => s.logs.slice(logged[i]).some((l) => l.includes('"level":40') && l.includes('This wait (owner') && l.includes(o2)));
  expect(warned).toHaveLength(1);
}

describe('deadlock detection behind Redis Sentinel', () => {
  it('ends the youngest wait of a two-owner cycle across two servers with ABORTED naming both locks; the other is granted', cycleIsEnded);

  it('still ends a cycle after a SENTINEL FAILOVER, on the promoted master', async () => {
    const old = await group.master();
    const sentinel = group.client(group.sentinels[0]);
    await waitFor(
      'Sentinel to accept the failover',
      async () => (await sentinel.call('SENTINEL', 'FAILOVER', MASTER_NAME).catch(() => null)) === 'OK',
      20_000,
      200,
    );
    const promoted = await group.failedOverFrom(old);
    expect(promoted.port).not.toBe(old.port);
    // Each server grants again once its quarantine of the new master (the lease cap plus 1 s) ends.
    for (const c of clients) {
      await waitFor(
        'a grant on the promoted master',
        async () => {
          const name = uniqueName('sen-probe');
          const r = await c.acquire({ name, ttlMs: '1000' }).catch(() => null);
          if (r?.acquired) await c.release({ name, token: r.token });
          return !!r?.acquired;
        },
        20_000,
        100,
      );
    }
    await cycleIsEnded();
  }, 60_000);
});
