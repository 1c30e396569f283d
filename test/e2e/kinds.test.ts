// Lock kinds on one data model: shared/exclusive (read-write) locks and counting semaphores.
import { status } from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { LockMode } from '../../gen/holdfast/v1/lock';
import type { TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { waitFor } from '../support/wait';

const SHARED = LockMode.LOCK_MODE_SHARED;
const EXCLUSIVE = LockMode.LOCK_MODE_EXCLUSIVE;

const env = useServers(2);
let a: TestClient;
let b: TestClient;
beforeAll(() => void ([a, b] = env.clients));

const waiters = async (name: string) => (await a.inspect({ name })).waiters;

describe('shared/exclusive locks', () => {
  it('admits many readers, queues a writer behind them, and stops new readers from starving it', async () => {
    const name = uniqueName();
    const readers = await Promise.all(Array.from({ length: 5 }, (_, i) => (i % 2 ? a : b).acquire({ name, mode: SHARED })));
    expect(readers.every((r) => r.acquired)).toBe(true);
    expect(new Set(readers.map((r) => r.token)).size).toBe(5);
    expect((await a.acquire({ name, mode: EXCLUSIVE })).acquired).toBe(false);

    let writerGranted = false;
    const writer = b.acquire({ name, mode: EXCLUSIVE, waitTimeoutMs: '30000' }).then((g) => ((writerGranted = true), g));
    await waitFor('the writer to queue', async () => (await waiters(name)) === 1);
    expect((await a.acquire({ name, mode: SHARED })).acquired).toBe(false); // no reader barges past a queued writer

    for (const [i, reader] of readers.entries()) {
      expect(writerGranted).toBe(false);
      await (i % 2 ? a : b).release({ name, token: reader.token });
    }
    const grant = await writer;
    expect(grant.acquired).toBe(true);
    const info = await a.inspect({ name });
    expect(info.holders).toEqual([expect.objectContaining({ mode: EXCLUSIVE, holdCount: 1 })]);
  });

  it('grants the leading run of shared waiters together, and stops at the first writer', async () => {
    const name = uniqueName();
    const writer = await a.acquire({ name, mode: EXCLUSIVE, ttlMs: '30000' });
    const modes = [SHARED, SHARED, SHARED, EXCLUSIVE, SHARED];
    const granted: number[] = [];
    const calls: Promise<{ acquired: boolean; token: string }>[] = [];
    for (const [i, mode] of modes.entries()) {
      calls.push((i % 2 ? a : b).acquire({ name, mode, waitTimeoutMs: '30000' }).then((g) => (granted.push(i), g)));
      await waitFor(`waiter ${i} to queue`, async () => (await waiters(name)) === i + 1);
    }
    await a.release({ name, token: writer.token });
    const readers = await Promise.all(calls.slice(0, 3));
    expect(readers.every((r) => r.acquired)).toBe(true);
    const info = await a.inspect({ name });
    expect(info.holders.map((h) => h.mode)).toEqual([SHARED, SHARED, SHARED]);
    expect(info.waiters).toBe(2);
    expect(granted.sort()).toEqual([0, 1, 2]);
    for (const [i, r] of readers.entries()) await (i % 2 ? a : b).release({ name, token: r.token });
    const secondWriter = await calls[3];
    expect(secondWriter.acquired).toBe(true);
    await b.release({ name, token: secondWriter.token });
    expect((await calls[4]).acquired).toBe(true);
  });

  it('re-enters shared, refuses shared -> exclusive upgrade, allows exclusive -> shared downgrade', async () => {
    const name = uniqueName();
    const r1 = await a.acquire({ name, owner: 'reader', mode: SHARED });
    const r2 = await b.acquire({ name, owner: 'reader', mode: SHARED });
    expect(r2).toMatchObject({ token: r1.token, holdCount: 2 });
    await expect(a.acquire({ name, owner: 'reader', mode: EXCLUSIVE })).rejects.toMatchObject({
      code: status.FAILED_PRECONDITION,
      details: expect.stringMatching(/upgrad/),
    });

    const other = uniqueName();
    const w = await a.acquire({ name: other, owner: 'writer', mode: EXCLUSIVE });
    const down = await a.acquire({ name: other, owner: 'writer', mode: SHARED });
    expect(down).toMatchObject({ token: w.token, holdCount: 2 });
    expect((await b.acquire({ name: other, mode: SHARED })).acquired).toBe(false); // still exclusive
    expect(await a.release({ name: other, token: w.token })).toEqual({ released: false, holdCount: 1 });
    // The exclusive hold went first: the owner now holds it shared, so other readers may enter.
    expect((await a.inspect({ name: other })).holders[0].mode).toBe(SHARED);
    expect((await b.acquire({ name: other, mode: SHARED })).acquired).toBe(true);
    expect((await b.acquire({ name: other, mode: EXCLUSIVE })).acquired).toBe(false);
  });
});

describe('semaphores', () => {
  it('admits `limit` holders, each with its own token and fencing token; the next waits for a release', async () => {
    const name = uniqueName();
    const permits = await Promise.all([a, b, a].map((c) => c.acquire({ name, limit: 3 })));
    expect(permits.every((p) => p.acquired)).toBe(true);
    expect(new Set(permits.map((p) => p.token)).size).toBe(3);
    expect(new Set(permits.map((p) => p.fencingToken)).size).toBe(3);
    expect((await b.acquire({ name, limit: 3 })).acquired).toBe(false);
    const fourth = b.acquire({ name, limit: 3, waitTimeoutMs: '30000' });
    await waitFor('the fourth to queue', async () => (await waiters(name)) === 1);
    await a.release({ name, token: permits[1].token });
    expect((await fourth).acquired).toBe(true);
    const info = await b.inspect({ name });
    expect(info.limit).toBe(3);
    expect(info.holders).toHaveLength(3);
    expect(info.holders.every((h) => h.mode === EXCLUSIVE && Number(h.ttlMs) > 0)).toBe(true);
  });

  it('frees only the permit of a holder that stopped renewing', async () => {
    const name = uniqueName();
    await a.acquire({ name, limit: 2, ttlMs: '300' });
    const keeper = await a.acquire({ name, limit: 2, ttlMs: '30000' });
    expect((await b.acquire({ name, limit: 2 })).acquired).toBe(false);
    const waited = await b.acquire({ name, limit: 2, waitTimeoutMs: '10000' });
    expect(waited.acquired).toBe(true);
    const info = await a.inspect({ name });
    expect(info.holders.map((h) => h.fencingToken).sort()).toEqual([keeper.fencingToken, waited.fencingToken].sort());
  });

  it('never admits more than `limit` under a 30-client stress run (enter/exit intervals)', async () => {
    const name = uniqueName();
    const intervals: [number, number][] = [];
    await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const c = i % 2 ? a : b;
        for (let round = 0; round < 6; round++) {
          const permit = await c.acquire({ name, limit: 3, ttlMs: '10000', waitTimeoutMs: '60000' });
          expect(permit.acquired).toBe(true);
          const enter = performance.now();
          await new Promise((r) => setTimeout(r, 2));
          intervals.push([enter, performance.now()]);
          await c.release({ name, token: permit.token });
        }
      }),
    );
    // Intervals are measured inside grant..release, so any instant covered by 4 of them is a violation.
    const events = intervals
      .flatMap(
        ([s, e]) =>
          [
            [s, 1],
            [e, -1],
          ] as [number, number][],
      )
      .sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    let concurrent = 0;
    let peak = 0;
    for (const [, delta] of events) peak = Math.max(peak, (concurrent += delta));
    expect(intervals).toHaveLength(180);
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBeGreaterThan(1);
  });

  it('refuses a conflicting limit with FAILED_PRECONDITION naming both values', async () => {
    const name = uniqueName();
    await a.acquire({ name, limit: 3 });
    await expect(b.acquire({ name, limit: 5 })).rejects.toMatchObject({
      code: status.FAILED_PRECONDITION,
      details: expect.stringMatching(/limit 3.*limit 5/),
    });
    await expect(b.acquire({ name, mode: SHARED })).rejects.toMatchObject({ code: status.FAILED_PRECONDITION });
    await expect(b.acquire({ name: uniqueName(), mode: SHARED, limit: 2 })).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining('limit'),
    });
  });

  it('re-enters a permit for the same owner without taking another', async () => {
    const name = uniqueName();
    const first = await a.acquire({ name, limit: 2, owner: 'job-7' });
    const again = await b.acquire({ name, limit: 2, owner: 'job-7' });
    expect(again).toMatchObject({ token: first.token, holdCount: 2 });
    expect((await a.acquire({ name, limit: 2 })).acquired).toBe(true);
  });
});

describe('Hold with every kind', () => {
  it('holds shared and semaphore locks and releases them on cancel', async () => {
    const rw = uniqueName();
    const readers = [a.hold({ name: rw, mode: SHARED }), b.hold({ name: rw, mode: SHARED })];
    await Promise.all(readers.map((s) => s.next((e) => !!e.acquired)));
    expect((await a.inspect({ name: rw })).holders).toHaveLength(2);

    const sem = uniqueName();
    const permits = [a.hold({ name: sem, limit: 2 }), b.hold({ name: sem, limit: 2 })];
    await Promise.all(permits.map((s) => s.next((e) => !!e.acquired)));
    expect((await a.acquire({ name: sem, limit: 2 })).acquired).toBe(false);

    const writer = a.acquire({ name: rw, waitTimeoutMs: '10000' });
    const third = b.acquire({ name: sem, limit: 2, waitTimeoutMs: '10000' });
    [...readers, permits[0]].forEach((s) => s.call.cancel());
    expect((await writer).acquired).toBe(true);
    expect((await third).acquired).toBe(true);
    permits[1].call.cancel();
  });
});
