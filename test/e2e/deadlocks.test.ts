// Deadlock detection (docs/deadlocks.md) on one real redis-server: servers 0 and 1 detect with a
// 500 ms timeout, server 2 has detection off (the negative control). Owners are random per test.
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeadlockError, HoldfastClient, NotAcquiredError, type LockChange } from '../../clients/ts/index';
import { waitsKey } from '../../src/engine/keys';
import { collect } from '../support/collect';
import { closeTwoOwnerCycle, waiting } from '../support/deadlocks';
import { freePort } from '../../src/redis/embedded';
import { connect, type TestClient } from '../support/client';
import { openSession } from '../support/session';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { startServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

const TIMEOUT_MS = 500;
/**
 * How long after the cycle closes its abort may come, beyond the timeout: a walk of a two-owner
 * cycle is 7 Redis calls (measured: a few ms); the rest is room for a busy 2-core machine.
 */
const BOUND_MS = 1500;

let metricsUrl = '';
// Server 1 (whose callers' waits are ended in the cycles below) serves /metrics.
const env = useServers(3, async (i) => {
  const args = ['--deadlock-timeout-ms', i < 2 ? String(TIMEOUT_MS) : '0'];
  if (i !== 1) return args;
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  return [...args, '--http-listen', `127.0.0.1:${port}`];
});
let clients: TestClient[];
/** An SDK client of server 2 (detection off: its watchers learn of aborts from the lock's channel). */
let watcherSdk: HoldfastClient;
beforeAll(() => {
  clients = env.clients;
  watcherSdk = new HoldfastClient(env.servers[2].addr);
});
afterAll(() => watcherSdk?.close());

const waiters = async (name: string) => (await clients[0].inspect({ name })).waiters;
const held = (c: TestClient, name: string, owner: string) => c.acquire({ name, owner, ttlMs: '30000' });
const deadlocksCounted = async () => Number(/^holdfast_deadlocks_total (\d+)/m.exec(await (await fetch(metricsUrl)).text())?.[1]);
const waitRecords = (owner: string) => env.redis.client.hlen(waitsKey('hf', owner));

interface Span {
  owner: string;
  lock: string;
  from: number;
  to: number;
}

/**
 * The randomized run's checker: each edge an abort named must have stood when it was answered
 * (its owner waiting for the lock, the holder holding it; the holder's grant answer may reach
 * this process a little after the abort's). Returns the edges that did not.
 */
function edgesThatDidNotStand(aborts: { at: number; message: string }[], waits: Span[], holds: Span[], slackMs = 300): string[] {
  const bad: string[] = [];
  for (const { at, message } of aborts) {
    const edges = [...message.matchAll(/owner "([^"]+)" waits for lock "([^"]+)", held by owner "([^"]+)"/g)];
    if (edges.length < 2) bad.push(`${message} (fewer than two edges)`);
    for (const [text, owner, lock, holder] of edges) {
      const waited = waits.some((w) => w.owner === owner && w.lock === lock && w.from <= at && w.to >= at - 1);
      const held = holds.some((h) => h.owner === holder && h.lock === lock && h.from <= at + slackMs && h.to >= at);
      if (!waited || !held) bad.push(text);
    }
  }
  return bad;
}

describe('deadlock detection', () => {
  it('ends one wait of a two-owner cycle across two servers with ABORTED naming both locks; the other is granted', async () => {
    const a = uniqueName('a');
    const counted = await deadlocksCounted();
    const stopWatch = new AbortController();
    const watched = collect(watcherSdk.watch(a, { signal: stopWatch.signal }));
    await watched.next((c: LockChange) => c.event === 'state');
    const cycle = await closeTwoOwnerCycle([clients[0], clients[1]], held, waiters, { ttlMs: 30_000, boundMs: TIMEOUT_MS + BOUND_MS, a });
    const { b, o1, o2, w1 } = cycle;
    const [a1, b2] = cycle.held;
    const message = cycle.first.error!.details;
    expect(await deadlocksCounted()).toBe(counted + 1);
    // A watcher of the ended wait's lock, on a third server, is told, with the same words.
    const told = await watched.next((c: LockChange) => c.event === 'deadlock');
    expect(told.deadlock).toBe(message);
    expect(told).toMatchObject({ name: a, waiters: 0 });
    expect(told.holders.map((h) => h.owner)).toEqual([o1]);
    stopWatch.abort();
    await clients[1].release({ name: b, token: b2.token });
    const second = await w1;
    expect(second.granted).toBe(true);
    expect(second.error).toBeNull();
    await clients[0].release({ name: b, token: second.token });
    await clients[0].release({ name: a, token: a1.token });
    await waitFor('the wait records to go', async () => (await waitRecords(o1)) + (await waitRecords(o2)) === 0);
    // The server whose walk ended it (either: both waits walk) logged it at warn.
    const warned = env.servers.slice(0, 2).filter((s) => s.logs.some((l) => l.includes('"level":40') && l.includes('This wait (owner') && l.includes(o2)));
    expect(warned.length).toBe(1);
  });

  for (const victim of ['session', 'unary', 'hold'] as const) {
    it(`the TypeScript SDK raises DeadlockError, naming the cycle, when the ended wait is ${victim === 'session' ? "a session's hold" : victim === 'unary' ? 'a unary Acquire' : 'a Hold stream'}`, async () => {
      // The first waiter is a unary Acquire on server 0; the second (the youngest, so the one ended)
      // is on server 1, over the transport under test.
      const sdk0 = new HoldfastClient(env.servers[0].addr, { transport: 'unary' });
      const sdk1 = new HoldfastClient(env.servers[1].addr, { transport: victim === 'session' ? 'session' : 'unary' });
      try {
        const [a, b] = [uniqueName('a'), uniqueName('b')];
        const [o1, o2] = [uniqueName('owner'), uniqueName('owner')];
        const a1 = await sdk0.acquire(a, { owner: o1, ttlMs: 30_000 });
        const b2 = await sdk1.hold(b, { owner: o2, ttlMs: 30_000 });
        const w1 = sdk0.acquire(b, { owner: o1, ttlMs: 30_000, waitMs: 20_000 });
        await waitFor('o1 to queue on b', async () => (await waiters(b)) === 1);
        const second =
          victim === 'unary' ? sdk1.acquire(a, { owner: o2, ttlMs: 30_000, waitMs: 20_000 }) : sdk1.hold(a, { owner: o2, ttlMs: 30_000, waitMs: 20_000 });
        const error = await second.then(
          () => null,
          (err: unknown) => err,
        );
        expect(error).toBeInstanceOf(DeadlockError);
        expect(error).not.toBeInstanceOf(NotAcquiredError);
        const deadlock = error as DeadlockError;
        expect(deadlock.lockName).toBe(a);
        expect(deadlock.message).toContain(`This wait (owner "${o2}" on lock "${a}")`);
        expect(deadlock.message).toContain(`owner "${o1}" waits for lock "${b}", held by owner "${o2}"`);
        await b2.release();
        const granted = await w1;
        await granted.release();
        await a1.release();
      } finally {
        sdk0.close();
        sdk1.close();
      }
    });
  }

  it('a cycle through a full semaphore and a shared lock with two holders ends the youngest wait, a Hold stream, ABORTED', async () => {
    // sem (limit 2) is held by O1 and O3; shared lock L by O2 and O4. O1 waits for L (exclusive:
    // edges to O2 and O4), then O2's Hold waits for sem (edges to O1 and O3): O1 -> O2 -> O1.
    const [sem, L] = [uniqueName('sem'), uniqueName('shared')];
    const [O1, O2, O3, O4] = [1, 2, 3, 4].map((i) => uniqueName(`owner-${i}`));
    const SHARED = 2;
    const s1 = await clients[0].acquire({ name: sem, owner: O1, limit: 2, ttlMs: '30000' });
    const s3 = await clients[1].acquire({ name: sem, owner: O3, limit: 2, ttlMs: '30000' });
    const l2 = await clients[1].acquire({ name: L, owner: O2, mode: SHARED, ttlMs: '30000' });
    const l4 = await clients[0].acquire({ name: L, owner: O4, mode: SHARED, ttlMs: '30000' });
    const w1 = waiting(clients[0], L, O1);
    await waitFor('O1 to queue on L', async () => (await waiters(L)) === 1);
    const hold = clients[1].hold({ name: sem, owner: O2, limit: 2, ttlMs: '30000', waitTimeoutMs: '20000' });
    const ended = await hold.ended;
    expect(ended.code).toBe(status.ABORTED);
    expect(ended.details).toContain(`This wait (owner "${O2}" on lock "${sem}")`);
    expect(ended.details).toContain(`owner "${O1}" waits for lock "${L}", held by owner "${O2}"`);
    // O1 still waits, behind both shared holders; it is granted once they give L back.
    await clients[1].release({ name: L, token: l2.token });
    await clients[0].release({ name: L, token: l4.token });
    const granted = await w1;
    expect(granted.error).toBeNull();
    expect(granted.granted).toBe(true);
    await clients[0].release({ name: L, token: granted.token });
    await clients[0].release({ name: sem, token: s1.token });
    await clients[1].release({ name: sem, token: s3.token });
  });

  it("two sessions without owners, each holding one lock and asking for the other's, are a cycle (the session is the identity)", async () => {
    const [a, b] = [uniqueName('a'), uniqueName('b')];
    const s1 = openSession(clients[0].client);
    const s2 = openSession(clients[1].client);
    try {
      expect((await s1.op({ hold: { name: a, ttlMs: '30000' } })).hold?.token).toBeTruthy();
      expect((await s2.op({ hold: { name: b, ttlMs: '30000' } })).hold?.token).toBeTruthy();
      const w1 = s1.op({ hold: { name: b, ttlMs: '30000', waitTimeoutMs: '20000' } });
      await waitFor('session 1 to queue on b', async () => (await waiters(b)) === 1);
      const w2 = s2.op({ hold: { name: a, ttlMs: '30000', waitTimeoutMs: '20000' } });
      const ended = await w2;
      expect(ended.error?.code).toBe(status.ABORTED);
      expect(ended.error?.message).toMatch(/^deadlock: owner "session:/);
      for (const name of [a, b]) expect(ended.error?.message).toContain(`"${name}"`);
      // Session 2 ends: its hold on b goes back, and session 1 is granted b.
      s2.call.end();
      expect((await w1).hold?.token).toBeTruthy();
    } finally {
      s1.call.end();
      s2.call.end();
    }
  });

  it('a randomized run: owners take random locks in random orders; every abort names edges that stood, no wait times out, nothing is left behind', async () => {
    let seed = 33;
    const random = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const locks = Array.from({ length: 4 }, () => uniqueName('r'));
    const owners = Array.from({ length: 6 }, () => uniqueName('ro'));
    const holds: { owner: string; lock: string; from: number; to: number }[] = [];
    const waits: { owner: string; lock: string; from: number; to: number }[] = [];
    const aborts: { at: number; message: string }[] = [];
    const timeouts: string[] = [];
    const run = async (owner: string, i: number) => {
      const c = clients[i % 2];
      for (let round = 0; round < 3; round++) {
        const order = [...locks].sort(() => random() - 0.5).slice(0, 2 + Math.floor(random() * 2));
        const pause = Math.floor(random() * 30);
        for (let attempt = 0; ; attempt++) {
          const taken: { lock: string; token: string; at: number }[] = [];
          let aborted = false;
          for (const lock of order) {
            const wait = { owner, lock, from: performance.now(), to: Infinity };
            waits.push(wait);
            const r = await waiting(c, lock, owner, { waitMs: 15_000 });
            wait.to = r.at;
            if (r.error?.code === status.ABORTED) {
              aborts.push({ at: r.at, message: r.error.details });
              aborted = true;
              break;
            }
            if (r.error) throw r.error;
            if (!r.granted) {
              timeouts.push(`${owner} on ${lock}`);
              break;
            }
            taken.push({ lock, token: r.token, at: r.at });
            await new Promise((resolve) => setTimeout(resolve, pause));
          }
          for (const t of taken.reverse()) {
            const to = performance.now();
            await c.release({ name: t.lock, token: t.token });
            holds.push({ owner, lock: t.lock, from: t.at, to });
          }
          if (!aborted || attempt >= 5) break;
        }
      }
    };
    await Promise.all(owners.map(run));
    expect(timeouts).toEqual([]);
    expect(aborts.every((a) => /^deadlock: /.test(a.message))).toBe(true);
    expect(edgesThatDidNotStand(aborts, waits, holds)).toEqual([]);
    for (const lock of locks) {
      const info = await clients[0].inspect({ name: lock });
      expect(info.holders).toEqual([]);
      expect(info.waiters).toBe(0);
    }
    console.log(`randomized run: ${aborts.length} deadlocks broken, ${holds.length} holds`);
  }, 120_000);

  it("negative control of the randomized run's checker: edges that did not stand are reported", () => {
    const waits = [{ owner: 'A', lock: 'x', from: 0, to: 1000 }];
    const holds = [{ owner: 'B', lock: 'x', from: 0, to: 2000 }];
    const stood = 'deadlock: owner "A" waits for lock "x", held by owner "B"; owner "B" waits for lock "x", held by owner "B"';
    // B never waited for x: one edge of the message did not stand.
    expect(edgesThatDidNotStand([{ at: 500, message: stood }], waits, holds)).toEqual(['owner "B" waits for lock "x", held by owner "B"']);
    // After A's wait ended and B released, nothing stood.
    expect(edgesThatDidNotStand([{ at: 2500, message: stood }], waits, holds)).toHaveLength(2);
  });

  it('negative control: with --deadlock-timeout-ms 0 both waits of the cycle run to their wait timeout', async () => {
    const [a, b] = [uniqueName('a'), uniqueName('b')];
    const [o1, o2] = [uniqueName('owner'), uniqueName('owner')];
    const off = clients[2];
    const a1 = await held(off, a, o1);
    const b2 = await held(off, b, o2);
    const started = performance.now();
    const [w1, w2] = await Promise.all([
      waiting(off, b, o1, { waitMs: 3 * TIMEOUT_MS + BOUND_MS }),
      waiting(off, a, o2, { waitMs: 3 * TIMEOUT_MS + BOUND_MS }),
    ]);
    for (const w of [w1, w2]) {
      expect(w.error).toBeNull();
      expect(w.granted).toBe(false);
      expect(w.at - started).toBeGreaterThanOrEqual(3 * TIMEOUT_MS + BOUND_MS - 50);
    }
    expect(await waitRecords(o1)).toBe(0);
    await off.release({ name: a, token: a1.token });
    await off.release({ name: b, token: b2.token });
  });

  it('converging acyclic waits (a diamond whose branches meet at one owner) end nobody', async () => {
    // A waits for p (held by B) and q (held by C); B and C both wait for r (held by D); D waits
    // for s (held by E), and E waits for nothing. D is reached twice: not a cycle.
    const [p, q, r, s] = ['p', 'q', 'r', 's'].map((l) => uniqueName(l));
    const [A, B, C, D, E] = ['A', 'B', 'C', 'D', 'E'].map((o) => uniqueName(`owner-${o}`));
    const before = env.servers.map((srv) => srv.logs.length);
    const grants = [await held(clients[0], p, B), await held(clients[1], q, C), await held(clients[0], r, D), await held(clients[1], s, E)];
    const waitMs = 4 * TIMEOUT_MS;
    const waits = [
      waiting(clients[0], p, A, { waitMs }),
      waiting(clients[1], q, A, { waitMs }),
      waiting(clients[1], r, B, { waitMs }),
      waiting(clients[0], r, C, { waitMs }),
      waiting(clients[1], s, D, { waitMs }),
    ];
    // Every wait reached the timeout and walked.
    await waitFor('every wait to record itself', async () => (await Promise.all([A, B, C, D].map(waitRecords))).join() === '2,1,1,1');
    for (const w of await Promise.all(waits)) {
      expect(w.error).toBeNull();
      expect(w.granted).toBe(false);
    }
    const names = [p, q, r, s];
    await Promise.all(grants.map((g, i) => clients[i % 2].release({ name: names[i], token: g.token })));
    expect(env.servers.some((srv, i) => srv.logs.slice(before[i]).some((l) => l.includes('cycle')))).toBe(false);
  });

  it('a cycle that breaks while it is checked again (a holder releases) ends nobody', async () => {
    // This server pauses 3 s between finding a cycle and checking it again (a test hook).
    const paused = await startServerProcess(env.redis.url, ['--deadlock-timeout-ms', String(TIMEOUT_MS)], { HOLDFAST_DEADLOCK_RECHECK_DELAY_MS: '3000' });
    const c = connect(paused.addr);
    try {
      const [a, b] = [uniqueName('a'), uniqueName('b')];
      const [o1, o2] = [uniqueName('owner'), uniqueName('owner')];
      const a1 = await held(c, a, o1);
      const b2 = await held(c, b, o2);
      const w1 = waiting(c, b, o1);
      const w2 = waiting(c, a, o2);
      const lines = (text: string) => paused.logs.filter((l) => l.includes(text)).length;
      await waitFor('a walk to find the cycle', () => lines('found a cycle') > 0);
      await c.release({ name: b, token: b2.token });
      const first = await w1;
      expect(first.granted).toBe(true);
      await waitFor('every walk that found it to see it broke', () => lines('broke before it was checked again') >= lines('found a cycle'), 10_000);
      await c.release({ name: b, token: first.token });
      await c.release({ name: a, token: a1.token });
      const second = await w2;
      expect(second.error).toBeNull();
      expect(second.granted).toBe(true);
      await c.release({ name: a, token: second.token });
      expect(paused.logs.some((l) => l.includes('deadlock: '))).toBe(false);
    } finally {
      c.close();
      await paused.stop();
    }
  });
});
