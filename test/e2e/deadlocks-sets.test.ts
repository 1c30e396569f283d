// Deadlock detection where a lock set is in the cycle (docs/deadlocks.md): two servers on one real
// redis-server, both detecting with a 500 ms timeout. A set takes its members one at a time in
// canonical order, so once it holds some it can wait, as the youngest wait of a cycle, for the
// next; that wait is ended, and the set's call ends ABORTED, giving back what it took. Sets whose
// members are granted without a cycle are never ended. Over the SDK's unary calls (AcquireSet,
// the HoldSet stream) and its session (acquire_set, hold_set ops) alike.
import { status, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeadlockError, HoldfastClient } from '../../clients/ts/index';
import { waitsKey } from '../../src/engine/keys';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { waitFor } from '../support/wait';

const TIMEOUT_MS = 500;
/** As in deadlocks.test.ts: room for a busy 2-core machine beyond a walk of a few ms. */
const BOUND_MS = 1500;

const env = useServers(2, ['--deadlock-timeout-ms', String(TIMEOUT_MS)]);

const inspect = (name: string) => env.clients[0].inspect({ name });
const waiters = async (name: string) => (await inspect(name)).waiters;
/** Each lock's holders' owners, sorted, and its queue's length: what was left on it. */
const state = (names: string[]) =>
  Promise.all(
    names.map(async (name) => {
      const info = await inspect(name);
      return { owners: info.holders.map((h) => h.owner).sort(), waiters: info.waiters };
    }),
  );
const waitRecords = (owner: string) => env.redis.client.hlen(waitsKey('hf', owner));
/** Names in one canonical order: `${base}-1` < `${base}-2` < ... */
const ordered = (count: number) => {
  const base = uniqueName('dl-set');
  return Array.from({ length: count }, (_, i) => `${base}-${i + 1}`);
};
/** A unary Acquire that waits (raw gRPC): its outcome. */
const waiting = (c: (typeof env.clients)[number], name: string, owner: string, waitMs = 20_000) =>
  c.acquire({ name, owner, ttlMs: '30000', waitTimeoutMs: String(waitMs) }).then(
    (r) => ({ granted: r.acquired, token: r.token, error: null as ServiceError | null }),
    (err: ServiceError) => ({ granted: false, token: '', error: err }),
  );
const held = async (c: (typeof env.clients)[number], name: string, owner: string) => {
  const r = await c.acquire({ name, owner, ttlMs: '30000' });
  expect(r.acquired).toBe(true);
  return r.token;
};
/** Log lines of both servers since `from` that speak of a deadlock or a cycle. */
const cycleLines = (from: number[]) => env.servers.flatMap((s, i) => s.logs.slice(from[i]).filter((l) => l.includes('deadlock: ') || l.includes('cycle')));

describe.each(['unary', 'session'] as const)('deadlocks through lock sets (SDK transport %s)', (transport) => {
  let sdk: HoldfastClient;
  beforeAll(() => {
    sdk = new HoldfastClient(env.servers[0].addr, { transport });
  });
  afterAll(() => sdk?.close());

  for (const form of ['holdSet', 'acquireSet'] as const) {
    it(`${form === 'holdSet' ? 'a HoldSet' : 'an AcquireSet'} whose wait for its last member is the youngest of a cycle ends ABORTED naming it, gives back its members, and the other waiter is granted`, async () => {
      // m1 < m2 < m3. X holds m3 and W holds m2. Y's set takes m1 and queues on m2 (behind W);
      // X queues on m1 (held by Y); W gives m2 back, so the set takes it and queues on m3 (held by
      // X): Y -> X (m3), X -> Y (m1), and the set's wait on m3, queued last, is the youngest.
      const [m1, m2, m3] = ordered(3);
      const [X, Y, W] = ['x', 'y', 'w'].map((o) => uniqueName(`owner-${o}`));
      const before = env.servers.map((s) => s.logs.length);
      const c1 = env.clients[1];
      const x3 = await held(c1, m3, X);
      const w2 = await held(c1, m2, W);
      const options = { owner: Y, ttlMs: 30_000, waitMs: 20_000 };
      const set = (form === 'holdSet' ? sdk.holdSet([m3, m2, m1], options) : sdk.acquireSet([m3, m2, m1], options)).then(
        (s) => ({ error: null, at: performance.now(), release: () => s.release() }),
        (err: unknown) => ({ error: err, at: performance.now(), release: async () => {} }),
      );
      await waitFor('the set to take m1 and queue on m2', async () => (await waiters(m2)) === 1);
      // Negative control of the check below that Y holds nothing afterwards: now it does.
      expect(await state([m1, m2, m3])).toEqual([
        { owners: [Y], waiters: 0 },
        { owners: [W], waiters: 1 },
        { owners: [X], waiters: 0 },
      ]);
      const x1 = waiting(c1, m1, X);
      await waitFor('X to queue on m1', async () => (await waiters(m1)) === 1);
      await c1.release({ name: m2, token: w2 });
      await waitFor('the set to take m2 and queue on m3', async () => (await waiters(m3)) === 1);
      const closed = performance.now();

      const ended = await set;
      expect(ended.at - closed).toBeLessThan(TIMEOUT_MS + BOUND_MS);
      expect(ended.error).toBeInstanceOf(DeadlockError);
      const deadlock = ended.error as DeadlockError;
      expect(deadlock.code).toBe(status.ABORTED);
      // A unary call or a stream carries the reason as metadata; a session's op has none of its own.
      if (transport === 'unary') expect(deadlock.metadata?.get('holdfast-reason')).toEqual(['deadlock']);
      expect(deadlock.message).toMatch(/^deadlock: /);
      expect(deadlock.message).toContain(`owner "${Y}" waits for lock "${m3}", held by owner "${X}"`);
      expect(deadlock.message).toContain(`owner "${X}" waits for lock "${m1}", held by owner "${Y}"`);
      expect(deadlock.message).toContain(`This wait (owner "${Y}" on lock "${m3}")`);
      // Negative control of the acyclic test's check: the servers logged this cycle.
      await waitFor('the cycle in the logs', () => cycleLines(before).some((l) => l.includes(Y)));

      // The members the set took are given back: X, waiting on m1, is granted it.
      const granted = await x1;
      expect(granted.error).toBeNull();
      expect(granted.granted).toBe(true);
      expect(await state([m1, m2, m3])).toEqual([
        { owners: [X], waiters: 0 },
        { owners: [], waiters: 0 },
        { owners: [X], waiters: 0 },
      ]);
      await waitFor('the wait records to go', async () => (await waitRecords(X)) + (await waitRecords(Y)) === 0);
      await c1.release({ name: m1, token: granted.token });
      await c1.release({ name: m3, token: x3 });
      expect(await state([m1, m2, m3])).toEqual([0, 1, 2].map(() => ({ owners: [], waiters: 0 })));
    });
  }

  it('sets asked for in opposite orders, one waiting behind a chain of waits longer than the timeout, are granted and never aborted', async () => {
    // P's set holds n1 and n2; Q's set, asked as [n2, n1], queues on n1 (canonical order first,
    // holding nothing); P, still holding its set, waits for r (held by Z, who waits for nothing):
    // Q -> P -> Z, no cycle. Both waits outlast the timeout and walk; nothing ends.
    const [n1, n2, r] = ordered(3);
    const [P, Q, Z] = ['p', 'q', 'z'].map((o) => uniqueName(`owner-${o}`));
    const before = env.servers.map((s) => s.logs.length);
    const z = await held(env.clients[1], r, Z);
    const first = await sdk.holdSet([n1, n2], { owner: P, ttlMs: 30_000 });
    const second = sdk.acquireSet([n2, n1], { owner: Q, ttlMs: 30_000, waitMs: 20_000 }).then(
      (s) => ({ set: s, error: null }),
      (err: unknown) => ({ set: null, error: err }),
    );
    await waitFor('the second set to queue on n1', async () => (await waiters(n1)) === 1);
    expect(await state([n1, n2])).toEqual([
      { owners: [P], waiters: 1 },
      { owners: [P], waiters: 0 },
    ]);
    // P's wait for r runs to its wait timeout: by then Q's wait (queued first) has walked twice.
    const p = waiting(env.clients[1], r, P, 4 * TIMEOUT_MS);
    await waitFor('both waits to record themselves (they walk next)', async () => (await waitRecords(Q)) === 1 && (await waitRecords(P)) === 1);
    const pr = await p;
    expect(pr.error).toBeNull();
    expect(pr.granted).toBe(false);
    await first.release();
    const granted = await second;
    expect(granted.error).toBeNull();
    expect(await state([n1, n2])).toEqual([
      { owners: [Q], waiters: 0 },
      { owners: [Q], waiters: 0 },
    ]);
    await granted.set!.release();
    await env.clients[1].release({ name: r, token: z });
    expect(await state([n1, n2, r])).toEqual([0, 1, 2].map(() => ({ owners: [], waiters: 0 })));
    await waitFor('the wait records to go', async () => (await waitRecords(P)) + (await waitRecords(Q)) === 0);
    expect(cycleLines(before)).toEqual([]);
  });
});
