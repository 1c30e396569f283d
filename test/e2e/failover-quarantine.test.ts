// The failover quarantine on real processes (a master, two replicas, three Sentinels), on by
// default, with --max-ttl-ms 6000 and no replica acknowledgement (--sync-replicas 0): the quarantine
// alone must keep the lost grant of a failover from being granted again while its client may
// still hold it. Also: a server that starts against a master it cannot vouch for quarantines,
// one that starts after the quarantine is over does not, and health, Inspect and Hold say so.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LostReason, type AcquireResponse } from '../../gen/holdfast/v1/lock';
import { connect, type TestClient } from '../support/client';
import { expectFailoverLoss } from '../support/failover-loss';
import { healthStatus } from '../support/health';
import { uniqueName } from '../support/redis';
import { MASTER_NAME, startTestSentinels, type TestSentinels } from '../support/sentinel';
import { CLI, startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

const MAX_TTL_MS = 6000;
const QUARANTINE_MS = MAX_TTL_MS + 500;

let group: TestSentinels;
let args: string[];
const servers: ServerProcess[] = [];
const clients: TestClient[] = [];

async function startServer(): Promise<{ server: ServerProcess; client: TestClient }> {
  const server = await startServerProcess(undefined, args);
  const client = connect(server.addr);
  servers.push(server);
  clients.push(client);
  return { server, client };
}

beforeAll(async () => {
  // min-replicas-to-write 0 lets the cut-off master acknowledge a grant no replica has: the quarantine alone must cover it.
  group = await startTestSentinels({ vouch: false, nodeArgs: ['--min-replicas-to-write', '0'] }); // the first test meets a master without an epoch record
  args = [
    '--redis-sentinels',
    group.sentinelAddrs.join(','),
    '--redis-master',
    MASTER_NAME,
    '--sync-replicas',
    '0',
    '--max-ttl-ms',
    String(MAX_TTL_MS),
    '--quarantine-margin-ms',
    '500',
    '--default-ttl-ms',
    '2000',
  ];
}, 60_000);
afterAll(async () => {
  clients.forEach((c) => c.close());
  await Promise.all(servers.map((s) => s.stop()));
  await group?.cleanup();
});

const code = (p: Promise<unknown>) =>
  p.then(
    () => status.OK,
    (err: { code: number }) => err.code,
  );

it('quarantines a master it has no epoch record for at start-up; a server started after the quarantine grants at once', async () => {
  const startedAt = Date.now();
  const { server, client } = await startServer();
  const name = uniqueName('q');
  expect(await healthStatus(server.addr)).toBe('NOT_SERVING');
  expect(await code(client.acquire({ name }))).toBe(status.UNAVAILABLE);
  expect(Number((await client.inspect({ name })).grantsResumeInMs)).toBeGreaterThan(0);
  const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'status', name, '--addr', server.addr]);
  expect(stdout).toMatch(/^quarantine after a Redis failover: no new grants for \d+\.\ds \(until /);
  const waited = await client.acquire({ name, ttlMs: '1000', waitTimeoutMs: '15000' }); // waiters wait it out
  expect(waited.acquired).toBe(true);
  expect(Date.now() - startedAt).toBeGreaterThanOrEqual(QUARANTINE_MS - 200);
  await waitFor('health SERVING', async () => (await healthStatus(server.addr)) === 'SERVING');
  expect((await client.inspect({ name })).grantsResumeInMs).toBe('0');
  expect(await code(client.acquire({ name: uniqueName('q'), ttlMs: String(MAX_TTL_MS + 1) }))).toBe(status.INVALID_ARGUMENT);

  const late = await startServer(); // the epoch record names this master and its quarantine is over
  expect((await late.client.acquire({ name: uniqueName('q') })).acquired).toBe(true);
  expect(await healthStatus(late.server.addr)).toBe('SERVING');
}, 60_000);

it('after a failover, grants nothing until every lease of the old master has run out; a lost Hold ends with LOST_REASON_FAILOVER', async () => {
  const [a, b] = clients;
  const kept = a.hold({ name: uniqueName('kept'), ttlMs: String(MAX_TTL_MS) });
  await kept.next((e) => !!e.acquired);

  const master = await group.master();
  const replicas = await group.cutReplicas(master);
  const name = uniqueName('lost');
  const sentAt = Date.now();
  const lost = await a.acquire({ name, ttlMs: String(MAX_TTL_MS) }); // the master acknowledges; no replica has it
  expect(lost.acquired).toBe(true);
  const holdSentAt = Date.now();
  const lostHold = a.hold({ name: uniqueName('lost-hold'), ttlMs: String(MAX_TTL_MS) });
  await lostHold.next((e) => !!e.acquired);
  process.kill(master.pid, 'SIGKILL');
  replicas.forEach((r) => process.kill(r.pid, 'SIGCONT'));
  const killedAt = Date.now();

  // Watch from the kill on: the quarantine's signs must show while it lasts, however long the
  // failover takes on a loaded machine.
  const seen = { quarantine: 0, tryOnceUnavailable: 0, notServing: 0 };
  // When the server first answered from the new master, after failing while Redis was away.
  let failedOnce = false;
  let answeredAgainAt = Infinity;
  let watching = true;
  const probe = uniqueName('probe');
  const watcher = (async () => {
    while (watching) {
      const [info, tryOnce, health] = await Promise.all([
        b.inspect({ name }).catch(() => undefined),
        code(b.acquire({ name: probe, ttlMs: '1000' })),
        healthStatus(servers[1].addr).catch(() => ''),
      ]);
      if (!info) failedOnce = true;
      else if (failedOnce && answeredAgainAt === Infinity) answeredAgainAt = Date.now();
      if (Number(info?.grantsResumeInMs ?? 0) > 0) {
        seen.quarantine++;
        if (tryOnce === status.UNAVAILABLE) seen.tryOnceUnavailable++;
        if (health === 'NOT_SERVING') seen.notServing++;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  await group.failedOverFrom(master);

  // A waiter is granted only once the lost grant's lease (counted from its send time) is over.
  // While the server is still reconnecting to the new master it answers UNAVAILABLE (Redis away:
  // nothing to wait on), and the waiter asks again, as a client would.
  const next = (await waitFor(
    'a waiting grant after the failover',
    () =>
      b
        .acquire({ name, ttlMs: '1000', waitTimeoutMs: '20000' })
        .catch((err: { code?: number }) => (err.code === status.UNAVAILABLE ? undefined : Promise.reject(err))),
    30_000,
    100,
  )) as AcquireResponse;
  const grantedAt = Date.now();
  expect(next.acquired).toBe(true);
  expect(grantedAt).toBeGreaterThanOrEqual(sentAt + MAX_TTL_MS);
  watching = false;
  await watcher;
  // Quarantined: Inspect said until when, try-once callers got UNAVAILABLE, health was NOT_SERVING.
  expect(seen.quarantine).toBeGreaterThan(0);
  expect(seen.tryOnceUnavailable).toBeGreaterThan(0);
  expect(seen.notServing).toBeGreaterThan(0);
  // Tokens are Redis TIME in µs at least: the first one after the quarantine leads the lost one by
  // the quarantine at least, so a new master whose clock is behind by less still hands out more.
  expect(BigInt(next.fencingToken) - BigInt(lost.fencingToken)).toBeGreaterThanOrEqual(BigInt(QUARANTINE_MS * 1000));
  console.log(`quarantine: first grant ${grantedAt - killedAt} ms after the master was killed (lease ${MAX_TTL_MS} ms, quarantine ${QUARANTINE_MS} ms)`);
  await waitFor('health SERVING', async () => (await healthStatus(servers[1].addr)) === 'SERVING');

  // The Hold whose grant the new master never had is told so; the surviving one is renewed, or
  // (if the failover outlasted its lease) reported lost: never silently either way.
  // The server first answered again once it had reached the new master; a second covers the
  // renewal tick and the check after a reconnect.
  expect(answeredAgainAt).toBeLessThan(Infinity); // else the strict case below could never run
  console.log(`quarantine: the server answered again ${answeredAgainAt - killedAt} ms after the kill`);
  const lostEvent = await lostHold.next((e) => !!e.lost);
  expectFailoverLoss(lostEvent.lost!.code, { sentAt: holdSentAt, ttlMs: MAX_TTL_MS }, answeredAgainAt, 1000);
  const keptLost = kept.events.find((e) => e.lost);
  if (keptLost) expect([LostReason.LOST_REASON_BACKEND_UNAVAILABLE, LostReason.LOST_REASON_FAILOVER]).toContain(keptLost.lost!.code);
  else {
    const renewed = kept.events.filter((e) => e.renewed).length;
    await kept.next(() => kept.events.filter((e) => e.renewed).length > renewed);
  }
  kept.call.cancel();
}, 90_000);
