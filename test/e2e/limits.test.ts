// Server limits (README "Limits"): each cap answers RESOURCE_EXHAUSTED naming itself (or, for
// streams and pings, is enforced by HTTP/2), and the server keeps serving every other call.
// Two server processes on one real redis-server, with small caps so that tests reach them.
import { connect as http2Connect, constants } from 'node:http2';
import { status } from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { waitFor } from '../support/wait';

const env = useServers(2, [
  '--max-waiters-per-connection',
  '3',
  '--max-holds-per-connection',
  '2',
  '--max-waiters-per-namespace',
  '5',
  '--max-holds-per-namespace',
  '4',
  '--max-waiters-per-lock',
  '4',
  '--max-message-bytes',
  '2048',
  '--max-concurrent-streams',
  '4',
  '--min-ping-interval-ms',
  '1000',
]);

const opened: TestClient[] = [];
/** A client on a connection of its own (grpc-js shares connections between channels otherwise). */
function ownConnection(server = 0): TestClient {
  const client = connect(env.servers[server].addr, { 'grpc.use_local_subchannel_pool': 1 });
  opened.push(client);
  return client;
}
afterAll(() => opened.forEach((c) => c.close()));

const WAIT = { ttlMs: '30000', waitTimeoutMs: '60000' };
/** Waits that fill a cap end by themselves soon after, so that the next test starts from zero. */
const SHORT_WAIT = { ttlMs: '30000', waitTimeoutMs: '2500' };

/** A lock taken by someone else, so that every Acquire with a wait queues. */
async function takenLock(): Promise<string> {
  const name = uniqueName();
  expect((await env.clients[0].acquire({ name, ttlMs: '60000' })).acquired).toBe(true);
  return name;
}

async function rejection(call: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await call;
  } catch (err) {
    const { code, details } = err as { code: number; details: string };
    return { code, details };
  }
  throw new Error('the call succeeded');
}

const waitersOn = async (name: string) => (await env.clients[0].inspect({ name })).waiters;

describe('limits', () => {
  it('waiters per connection: one more wait is RESOURCE_EXHAUSTED, other connections and try-once calls go on', async () => {
    const name = await takenLock();
    const conn = ownConnection();
    const waits = [1, 2, 3].map(() => conn.acquire({ name, ...SHORT_WAIT }));
    await waitFor('three waiters', async () => (await waitersOn(name)) === 3);
    expect(await rejection(conn.acquire({ name, ...WAIT }))).toMatchObject({
      code: status.RESOURCE_EXHAUSTED,
      details: expect.stringContaining('max-waiters-per-connection'),
    });
    // A try-once Acquire is no waiter; another connection may still wait.
    expect((await conn.acquire({ name: uniqueName() })).acquired).toBe(true);
    const other = ownConnection();
    const otherWait = other.acquire({ name, ...WAIT, waitTimeoutMs: '300' });
    expect((await otherWait).acquired).toBe(false);
    // Waits that end make room again.
    expect((await Promise.all(waits)).map((w) => w.acquired)).toEqual([false, false, false]);
    expect((await conn.acquire({ name, ...WAIT, waitTimeoutMs: '200' })).acquired).toBe(false);
  });

  it('Hold streams per connection: a third is RESOURCE_EXHAUSTED, the two open ones keep renewing', async () => {
    const conn = ownConnection();
    const holds = [conn.hold({ name: uniqueName(), ttlMs: '600' }), conn.hold({ name: uniqueName(), ttlMs: '600' })];
    await Promise.all(holds.map((h) => h.next((e) => !!e.acquired)));
    const third = conn.hold({ name: uniqueName() });
    expect(await third.ended).toMatchObject({ code: status.RESOURCE_EXHAUSTED, details: expect.stringContaining('max-holds-per-connection') });
    await Promise.all(holds.map((h) => h.next(() => h.events.filter((e) => e.renewed).length >= 2)));
    expect(holds.every((h) => !h.events.some((e) => e.lost))).toBe(true);
    // Another connection holds as before; an ended Hold frees its place.
    const other = ownConnection().hold({ name: uniqueName() });
    await other.next((e) => !!e.acquired);
    other.call.cancel();
    holds[0].call.cancel();
    await holds[0].ended;
    const replacement = conn.hold({ name: uniqueName() });
    await replacement.next((e) => !!e.acquired);
    replacement.call.cancel();
    holds[1].call.cancel();
  });

  it('per namespace (this server): waiters and Hold streams over all connections are capped', async () => {
    const names = [await takenLock(), await takenLock()];
    const [a, b] = [ownConnection(), ownConnection()];
    const waits = [a, a, a, b, b].map((c, i) => c.acquire({ name: names[i % 2], ...SHORT_WAIT }));
    await waitFor('five waiters', async () => (await waitersOn(names[0])) + (await waitersOn(names[1])) === 5);
    const c = ownConnection();
    expect(await rejection(c.acquire({ name: uniqueName(), ...WAIT }))).toMatchObject({
      code: status.RESOURCE_EXHAUSTED,
      details: expect.stringContaining('max-waiters-per-namespace'),
    });
    // The other server has its own count.
    const elsewhere = ownConnection(1);
    expect((await elsewhere.acquire({ name: uniqueName(), ...WAIT })).acquired).toBe(true);
    await Promise.all(waits);

    const holders = [ownConnection(), ownConnection()];
    const holds = [0, 0, 1, 1].map((i) => holders[i].hold({ name: uniqueName() }));
    await Promise.all(holds.map((h) => h.next((e) => !!e.acquired)));
    const fifth = ownConnection().hold({ name: uniqueName() });
    expect(await fifth.ended).toMatchObject({ code: status.RESOURCE_EXHAUSTED, details: expect.stringContaining('max-holds-per-namespace') });
    holds.forEach((h) => h.call.cancel());
  });

  it('waiters per lock, across servers: the fifth waiter on either server is RESOURCE_EXHAUSTED naming the lock', async () => {
    const name = await takenLock();
    const conns = [ownConnection(0), ownConnection(1), ownConnection(0), ownConnection(1)];
    const waits = conns.map((c) => c.acquire({ name, ...SHORT_WAIT }));
    await waitFor('four waiters', async () => (await waitersOn(name)) === 4);
    for (const server of [0, 1]) {
      const refused = await rejection(ownConnection(server).acquire({ name, ...WAIT }));
      expect(refused).toEqual({
        code: status.RESOURCE_EXHAUSTED,
        details: `lock "${name}" has 4 waiters queued, the most max-waiters-per-lock allows; try again later`,
      });
    }
    const hold = ownConnection(1).hold({ name, waitTimeoutMs: '1000' });
    expect(await hold.ended).toMatchObject({ code: status.RESOURCE_EXHAUSTED });
    // Other locks, and this lock's queue, are served as before.
    expect((await ownConnection(0).acquire({ name: uniqueName(), ...WAIT })).acquired).toBe(true);
    expect(await waitersOn(name)).toBe(4);
    await Promise.all(waits);
  });

  it('message size: a request over max-message-bytes is RESOURCE_EXHAUSTED, and the connection serves the next call', async () => {
    const conn = ownConnection();
    const refused = await rejection(conn.acquire({ name: 'x'.repeat(3000) }));
    expect(refused.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(refused.details).toMatch(/larger than max \(\d+ vs 2048\)/);
    // The largest legal request fits well under the default (16 KiB); here 2 KiB.
    const name = uniqueName().padEnd(500, 'n');
    expect((await conn.acquire({ name, owner: 'o'.repeat(512), requestId: 'r'.repeat(512) })).acquired).toBe(true);
  });

  it('concurrent streams: the server announces max-concurrent-streams in its HTTP/2 SETTINGS', async () => {
    const session = http2Connect(`http://${env.servers[0].addr}`);
    try {
      const settings = await new Promise<{ maxConcurrentStreams?: number }>((resolve) => session.once('remoteSettings', resolve));
      expect(settings.maxConcurrentStreams).toBe(4);
    } finally {
      session.destroy();
    }
    // A grpc-js client queues calls beyond it: with 2 Holds and 2 waits open, a fifth call waits for a free stream.
    const name = await takenLock();
    const conn = ownConnection();
    const holds = [conn.hold({ name: uniqueName() }), conn.hold({ name: uniqueName() })];
    await Promise.all(holds.map((h) => h.next((e) => !!e.acquired)));
    const waits = [conn.acquire({ name, ...SHORT_WAIT }), conn.acquire({ name, ...SHORT_WAIT })];
    await waitFor('two waiters', async () => (await waitersOn(name)) === 2);
    let answered = false;
    const queued = conn.inspect({ name }).then((r) => ((answered = true), r));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(answered).toBe(false);
    holds[0].call.cancel();
    expect((await queued).waiters).toBe(2);
    holds[1].call.cancel();
    await Promise.all(waits);
  });

  it('pings: a client pinging faster than min-ping-interval-ms is sent GOAWAY too_many_pings; others are served', async () => {
    const flooder = http2Connect(`http://${env.servers[0].addr}`);
    const goaway = new Promise<{ code: number; data: string }>((resolve) =>
      flooder.once('goaway', (code, _last, data) => resolve({ code, data: data?.toString() ?? '' })),
    );
    flooder.on('error', () => {});
    await new Promise((resolve) => flooder.once('remoteSettings', resolve));
    const timer = setInterval(() => {
      if (!flooder.destroyed) flooder.ping(() => {});
    }, 20);
    try {
      expect(await goaway).toEqual({ code: constants.NGHTTP2_ENHANCE_YOUR_CALM, data: 'too_many_pings' });
    } finally {
      clearInterval(timer);
      flooder.destroy();
    }
    await waitFor('the log line', async () => env.servers[0].logs.some((l) => l.includes('pinged too often')));
    expect((await ownConnection().acquire({ name: uniqueName() })).acquired).toBe(true);
  });

  it('pings no closer than min-ping-interval-ms are never strikes (negative control)', async () => {
    const polite = http2Connect(`http://${env.servers[0].addr}`);
    let wentAway = false;
    polite.on('goaway', () => (wentAway = true));
    await new Promise((resolve) => polite.once('remoteSettings', resolve));
    for (let i = 0; i < 5; i++) {
      await new Promise<void>((resolve, reject) => polite.ping((err) => (err ? reject(err) : resolve())));
      await new Promise((resolve) => setTimeout(resolve, 1100));
    }
    expect(wentAway).toBe(false);
    expect(polite.destroyed).toBe(false);
    polite.destroy();
  });
});
