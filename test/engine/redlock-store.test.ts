// Engine tier: the one lock engine on Redlock's store (three real, independent redis-servers).
// The store cannot queue, so waiters retry; what it cannot do it refuses before the engine acts;
// its Holds are kept by the engine's watchdog; a Release of a Hold's token names the hold.
// (Majority, restart and fencing behaviour with servers and frozen masters: test/e2e/redlock.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockEngine } from '../../src/engine/engine';
import { LockError } from '../../src/engine/errors';
import { epochKey } from '../../src/engine/keys';
import { Mode, type LostReason } from '../../src/engine/types';
import { RedlockStore } from '../../src/redlock/store';
import { keepHold, lockRequest, type TestEngine } from '../support/engine';
import { startTestRedis, uniqueName, type TestRedis } from '../support/redis';
import { waitFor } from '../support/wait';

const masters: TestRedis[] = [];
let store: RedlockStore;
let redlock: TestEngine;
const engine = () => redlock.engine as LockEngine;

beforeAll(async () => {
  masters.push(...(await Promise.all([0, 1, 2].map(() => startTestRedis()))));
  store = new RedlockStore({ urls: masters.map((m) => m.url), nodeTimeoutMs: 500, quarantineMs: 2000, epochKey: epochKey('hf') });
  const lockEngine = new LockEngine(store, { keyPrefix: 'hf', maxTtlMs: 60_000 });
  redlock = { engine: lockEngine, close: () => lockEngine.close() };
  // The masters were vouched for: they vote once each is identified.
  await waitFor('a majority of voting masters', () => store.grantsBlocked() === null, 10_000, 10);
});
afterAll(async () => {
  await redlock?.close();
  store?.close();
  await Promise.all(masters.map((m) => m.cleanup()));
});

const conflict = (err: unknown) => err instanceof LockError && err.kind === 'conflict';

describe('the engine on a store without a queue', () => {
  it('a waiter retries until the holder releases, is counted while it waits, and gets a higher fencing token', async () => {
    const name = uniqueName('rl');
    const first = await engine().acquire(lockRequest(name, 5000));
    expect(first).not.toBeNull();
    expect(await engine().acquire(lockRequest(name, 5000))).toBeNull(); // try-once: refused, never queued
    const waiting = engine().acquire(lockRequest(name, 5000, { waitMs: 10_000 }));
    await waitFor('the waiter to be counted', async () => (await engine().inspect(name)).waiters === 1 && engine().stats().waiters === 1);
    await engine().release(name, first!.token);
    const second = await waiting;
    expect(second).not.toBeNull();
    expect(BigInt(second!.fencingToken)).toBeGreaterThan(BigInt(first!.fencingToken));
    expect(engine().stats().waiters).toBe(0);
    await engine().release(name, second!.token);
  });

  it('refuses, before any vote, what a majority vote cannot do; and a re-entry the votes show', async () => {
    const name = uniqueName('rl');
    expect(() => engine().watch(name, { onUpdate: () => {}, onEnd: () => {} })).toThrow(/Watch is not supported in Redlock mode/);
    expect(await engine().setValue(name, 'token', 'v').catch(conflict)).toBe(true);
    expect(
      await engine()
        .acquire(lockRequest(name, 1000, { mode: Mode.SHARED }))
        .catch(conflict),
    ).toBe(true);
    expect(
      await engine()
        .acquire(lockRequest(name, 1000, { limit: 2 }))
        .catch(conflict),
    ).toBe(true);
    expect(engine().scanLocks).toBeUndefined();
    const held = await engine().acquire(lockRequest(name, 5000, { owner: 'w1' }));
    expect(held).not.toBeNull();
    expect(
      await engine()
        .acquire(lockRequest(name, 5000, { owner: 'w1' }))
        .catch(conflict),
    ).toBe(true);
    // The refused re-entry took nothing: the first grant is the lock's one holder.
    expect((await engine().inspect(name)).holders.map((h) => h.fencingToken)).toEqual([held!.fencingToken]);
    await engine().release(name, held!.token);
  });
});

describe('Holds on Redlock, kept by the engine watchdog', () => {
  it('a Release of a kept Hold token (no hold id given) ends it as released: the votes name the hold', async () => {
    const name = uniqueName('rl');
    const holdId = uniqueName('hold');
    const grant = await engine().acquire(lockRequest(name, 5000, { holdId }));
    let ended!: (reason: LostReason) => void;
    const lost = new Promise<LostReason>((resolve) => (ended = resolve));
    engine().keep(
      { name, token: grant!.token, holdId, ttlMs: 5000, maxHoldMs: 0, lockDelayMs: 0, releaseOnDisconnect: false },
      { onRenewed: () => {}, onLost: (reason) => ended(reason) },
      grant!.leaseStart,
      grant!.ttlMs,
    );
    const released = await engine().release(name, grant!.token);
    expect(released).toEqual({ released: true, holdCount: 0, holdId });
    expect(await lost).toBe('released');
    expect(engine().stats().keptLeases).toBe(0);
  });

  it('renews through a majority, and a hold capped by max hold ends as max_hold despite the drift taken off each renewal', async () => {
    const name = uniqueName('rl');
    const kept = await keepHold(redlock, name, 300, { maxHoldMs: 1200 });
    const end = await kept.lost;
    expect(kept.renewals.length).toBeGreaterThanOrEqual(2);
    // Each renewal confirms the lease less the clock drift allowance (1% + 2 ms).
    expect(kept.renewals.every((left) => left < 300)).toBe(true);
    expect(end.reason).toBe('max_hold');
    await waitFor('the capped lease to run out', async () => (await engine().inspect(name)).holders.length === 0, 5000, 20);
  });
});
