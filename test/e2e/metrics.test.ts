// Prometheus metrics and HTTP probes (README "Metrics"): a real server process with
// --metrics-listen, scraped with a real HTTP client (fetch) while locks are taken, waited for,
// handed off, lost and released; /readyz follows Redis going away and coming back.
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/redis/embedded';
import { startHoldingChild } from '../support/child';
import { connect, type TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { deleteLockState, uniqueName, type TestRedis } from '../support/redis';
import type { ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

let redis: TestRedis;
let server: ServerProcess;
let client: TestClient;
let peer: TestClient;
let base: string;

const env = useServers(1, async () => {
  const metricsPort = await freePort();
  base = `http://127.0.0.1:${metricsPort}`;
  // A 30 s lease cap: the quarantine after the Redis restart below lasts 31 s, not 61.
  return ['--metrics-listen', `127.0.0.1:${metricsPort}`, '--max-ttl-ms', '30000'];
});
beforeAll(() => {
  [redis, server, client] = [env.redis, env.servers[0], env.clients[0]];
  peer = connect(server.addr, { 'grpc.use_local_subchannel_pool': 1 });
});
afterAll(() => peer?.close());

/** Every sample of a scrape, keyed by its series as written: name{label="value",...}. */
async function scrape(): Promise<{ body: string; value(series: string): number }> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const body = await res.text();
  const samples = new Map<string, number>();
  for (const line of body.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return { body, value: (series) => samples.get(series) ?? 0 };
}

const ACQUIRE_OK = 'holdfast_rpcs_total{method="holdfast.v1.LockService/Acquire",code="OK"}';

describe('metrics', () => {
  it('/healthz and /readyz answer while Redis is up; other paths are 404', async () => {
    expect(await (await fetch(`${base}/healthz`)).text()).toBe('ok\n');
    const ready = await fetch(`${base}/readyz`);
    expect([ready.status, await ready.text()]).toEqual([200, 'ready\n']);
    expect((await fetch(`${base}/nothing`)).status).toBe(404);
  });

  it('an Acquire and a Release move the RPC, grant, latency and script series; lock names are no label', async () => {
    const before = await scrape();
    const name = uniqueName('metrics-secret-name');
    const grant = await client.acquire({ name, ttlMs: '10000' });
    await client.release({ name, token: grant.token });
    const after = await scrape();
    expect(after.value(ACQUIRE_OK) - before.value(ACQUIRE_OK)).toBe(1);
    expect(after.value('holdfast_grants_total') - before.value('holdfast_grants_total')).toBe(1);
    const acquired = 'holdfast_acquire_duration_seconds_count{outcome="granted"}';
    expect(after.value(acquired) - before.value(acquired)).toBe(1);
    const script = 'holdfast_redis_script_duration_seconds_count{script="acquire"}';
    expect(after.value(script) - before.value(script)).toBe(1);
    const released = 'holdfast_releases_total{by="holder"}';
    expect(after.value(released) - before.value(released)).toBe(1);
    expect(after.body).not.toContain('metrics-secret-name');
    // Node's process metrics are there too.
    expect(after.value('holdfast_process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('a waiter shows in the waiters gauge, and its grant in the wait and hand-off histograms', async () => {
    const name = uniqueName();
    const before = await scrape();
    const first = await client.acquire({ name, ttlMs: '30000' });
    const waiting = peer.acquire({ name, ttlMs: '10000', waitTimeoutMs: '30000' });
    await waitFor('one waiter', async () => (await scrape()).value('holdfast_waiters') === 1);
    await client.release({ name, token: first.token });
    expect((await waiting).acquired).toBe(true);
    const after = await scrape();
    expect(after.value('holdfast_waiters')).toBe(0);
    const waited = 'holdfast_wait_duration_seconds_count{outcome="granted"}';
    expect(after.value(waited) - before.value(waited)).toBe(1);
    expect(after.value('holdfast_handoff_duration_seconds_count') - before.value('holdfast_handoff_duration_seconds_count')).toBe(1);
    expect(after.value('holdfast_grants_total') - before.value('holdfast_grants_total')).toBe(2);
  });

  it('a Hold counts as active; its killed client gives its hold back as vanished', async () => {
    const name = uniqueName();
    const before = await scrape();
    const holder = await startHoldingChild(server.addr, name, 2000);
    await waitFor('an active hold', async () => (await scrape()).value('holdfast_holds_active') === 1);
    holder.child.kill('SIGKILL');
    await holder.exited;
    await waitFor('the hold given back as vanished', async () => {
      const now = await scrape();
      return (
        now.value('holdfast_holds_active') === 0 &&
        now.value('holdfast_releases_total{by="vanished"}') - before.value('holdfast_releases_total{by="vanished"}') === 1
      );
    });
  });

  it('a Hold whose grant vanished from Redis counts a lost lease and an expiry; a stale Release counts an expiry', async () => {
    const name = uniqueName();
    const before = await scrape();
    const stream = client.hold({ name, ttlMs: '600' });
    const { token } = (await stream.next((e) => !!e.acquired)).acquired!;
    await deleteLockState(redis, name);
    expect((await stream.ended).code).toBe(status.ABORTED);
    await expect(client.release({ name, token })).rejects.toMatchObject({ code: status.NOT_FOUND });
    const after = await scrape();
    const lost = 'holdfast_leases_lost_total{reason="expired"}';
    expect(after.value(lost) - before.value(lost)).toBe(1);
    expect(after.value('holdfast_lease_expiries_total{seen_by="hold"}') - before.value('holdfast_lease_expiries_total{seen_by="hold"}')).toBe(1);
    expect(after.value('holdfast_lease_expiries_total{seen_by="release"}') - before.value('holdfast_lease_expiries_total{seen_by="release"}')).toBe(1);
    const aborted = 'holdfast_rpcs_total{method="holdfast.v1.LockService/Hold",code="ABORTED"}';
    expect(after.value(aborted) - before.value(aborted)).toBe(1);
  });

  it('/readyz is 503 while Redis is down and through the quarantine after its restart, 200 again after; Redis errors are counted', async () => {
    // A release goes to Redis; a grant waits for it (its quarantine check says Redis is away).
    const errors = 'holdfast_redis_errors_total{script="release"}';
    const before = await scrape();
    await redis.stop();
    await waitFor('readyz 503', async () => (await fetch(`${base}/readyz`)).status === 503);
    expect(await (await fetch(`${base}/readyz`)).text()).toBe('not ready: Redis is not reachable\n');
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    await expect(client.acquire({ name: uniqueName() })).rejects.toMatchObject({ code: status.UNAVAILABLE });
    await expect(client.release({ name: uniqueName(), token: 'x'.repeat(22) })).rejects.toMatchObject({ code: status.UNAVAILABLE });
    const down = await scrape();
    expect(down.value('holdfast_redis_up')).toBe(0);
    expect(down.value(errors) - before.value(errors)).toBeGreaterThanOrEqual(1);
    await redis.restart();
    // Restarted empty: not ready until the quarantine (30 s cap + 1 s) is over.
    await waitFor('readyz 200', async () => (await fetch(`${base}/readyz`)).status === 200, 45_000, 200);
    expect((await scrape()).value('holdfast_redis_up')).toBe(1);
  }, 70_000);
});
