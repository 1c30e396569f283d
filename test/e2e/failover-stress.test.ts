// Mutual exclusion through a Sentinel failover: two holdfast servers with --sync-replicas auto,
// four workers contending for one lock, the master SIGKILLed mid-run. No two workers' grants may
// overlap (each kept as the worker's conservative window: from the grant's arrival to its
// release or its lease end), service resumes within seconds, and a Hold kept through the
// failover keeps renewing. The unavailability window is printed.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connect, type TestClient } from '../support/client';
import { contend, expectExclusive, longestGap } from '../support/contention';
import { uniqueName } from '../support/redis';
import { MASTER_NAME, startTestSentinels, type TestSentinels } from '../support/sentinel';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

let group: TestSentinels;
/**
 * The lease cap: it sizes the quarantine after the failover, and the kept Hold's lease, which must
 * outlast the time until a renewal is confirmed on the new master (a replica re-pointed by the
 * Sentinels): 3-5 s on a quiet machine, 14.5 s and once over 28 s on a loaded one.
 */
const MAX_TTL_MS = 45_000;
let servers: ServerProcess[];
let clients: TestClient[];

beforeAll(async () => {
  group = await startTestSentinels({ nodeArgs: ['--min-replicas-to-write', '1'] });
  // Default safety with a 45 s lease cap: the failover's quarantine lasts 46 s.
  const args = [
    '--redis-sentinels',
    group.sentinelAddrs.join(','),
    '--redis-master',
    MASTER_NAME,
    '--max-ttl-ms',
    String(MAX_TTL_MS),
    '--default-ttl-ms',
    '5000',
    '--sync-replicas',
    'auto',
  ];
  // A third server with --sync-replicas 0 (auto is the default behind Sentinel), to measure what WAIT adds to a grant.
  servers = await Promise.all([
    startServerProcess(undefined, args),
    startServerProcess(undefined, args),
    startServerProcess(undefined, [...args.slice(0, -2), '--sync-replicas', '0']),
  ]);
  clients = servers.map((s) => connect(s.addr));
}, 60_000);
afterAll(async () => {
  clients?.forEach((c) => c.close());
  await Promise.all((servers ?? []).map((s) => s.stop()));
  await group?.cleanup();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('measures what replica acknowledgement adds to a grant', async () => {
  const p50 = async (client: TestClient) => {
    const took: number[] = [];
    for (let i = 0; i < 200; i++) {
      const name = uniqueName('lat');
      const start = performance.now();
      const grant = await client.acquire({ name, ttlMs: '5000' });
      took.push(performance.now() - start);
      await client.release({ name, token: grant.token });
    }
    took.sort((x, y) => x - y);
    return { p50: took[100], p99: took[197] };
  };
  const plain = await p50(clients[2]);
  const acked = await p50(clients[0]);
  console.log(
    `Acquire round trip, p50 / p99: ${plain.p50.toFixed(2)} / ${plain.p99.toFixed(2)} ms without --sync-replicas, ` +
      `${acked.p50.toFixed(2)} / ${acked.p99.toFixed(2)} ms with --sync-replicas auto (2 replicas)`,
  );
});

it('keeps one holder at a time through a Sentinel failover, and resumes within seconds', async () => {
  const name = uniqueName('stress');
  // Its lease outlasts the outage: with --sync-replicas auto and min-replicas-to-write 1 nothing
  // is confirmed until the Sentinels have pointed the other replica at the new master, which took
  // 3-5 s in most runs and 14.5 s in one (a Hold whose lease ends meanwhile is rightly lost).
  const held = clients[0].hold({ name: uniqueName('held'), ttlMs: String(MAX_TTL_MS) });
  await held.next((e) => !!e.acquired);
  // Four workers on the two servers with --sync-replicas.
  const contention = contend(
    [0, 1, 2, 3].map((i) => clients[i % 2]),
    name,
    2000,
  );
  await sleep(1500);
  const old = await group.master();
  const killedAt = Date.now();
  process.kill(old.pid, 'SIGKILL');
  await group.failedOverFrom(old);
  const promotedAt = Date.now();
  const renewedBefore = held.events.filter((e) => e.renewed).length;
  // Run on until service has plainly resumed after the quarantine (a loaded machine may need longer).
  await waitFor('20 grants asked for after the kill', () => contention.windows.filter((w) => w.sentAt > killedAt).length >= 20, MAX_TTL_MS + 90_000, 50);
  const windows = await contention.stop();

  expectExclusive(windows);
  expect(windows.filter((w) => w.from < killedAt).length).toBeGreaterThan(10);
  const firstAfter = windows.find((w) => w.sentAt > killedAt)!.from;
  console.log(
    `Sentinel failover under contention: ${windows.length} grants, none overlapping; longest time without a grant ${longestGap(windows)} ms; ` +
      `first grant asked for after the kill came ${firstAfter - killedAt} ms after it (Sentinels agreed on the new master after ` +
      `${promotedAt - killedAt} ms); ${contention.unavailable} UNAVAILABLE answers`,
  );
  // The quarantine (the cap + 1 s) and then typically 3-5 s; the bound leaves room for a busy
  // 2-core machine (one run under a load of 20 took 14.9 s past the promotion).
  expect(firstAfter - promotedAt).toBeLessThan(MAX_TTL_MS + 1000 + 60_000);

  // The Hold kept through the failover renewed on the new master, and was never reported lost.
  await held.next(() => held.events.filter((e) => e.renewed).length > renewedBefore);
  expect(held.events.some((e) => e.lost)).toBe(false);
  held.call.cancel();
}, 240_000);
