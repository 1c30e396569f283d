// Engine tier: waiting. FIFO across engines, wake-ups pushed by the release (not found by
// polling), hand-off within one engine, and cancellation with an AbortSignal.
import { beforeAll, describe, expect, it } from 'vitest';
import type { AcquireParams, Grant } from '../../src/engine/types';
import { lockRequest, useEngines, type TestEngine } from '../support/engine';
import { deleteLockState, uniqueName, type TestRedis } from '../support/redis';
import { waitFor } from '../support/wait';

let redis: TestRedis;
let a: TestEngine;
let b: TestEngine;

// Waiters look again on their own only once a minute: within a test, only a push wakes them.
const NO_POLLING = { refreshMs: 60_000 };

const env = useEngines(2, NO_POLLING);
beforeAll(() => void ([redis, a, b] = [env.redis, ...env.engines]));

const request = (name: string, extra: Partial<AcquireParams> = {}) => lockRequest(name, 30_000, extra);

/** Starts a waiting acquire and resolves once Redis has it queued (`queued` waiters on the lock). */
async function queue(
  engine: TestEngine,
  name: string,
  queued: number,
  extra: Partial<AcquireParams> = {},
  signal?: AbortSignal,
): Promise<{ result: Promise<Grant | null> }> {
  const result = engine.engine.acquire(request(name, { waitMs: 20_000, ...extra }), signal);
  result.catch(() => {}); // awaited by the test; never an unhandled rejection meanwhile
  await waitFor(`${queued} waiter(s) on ${name}`, async () => (await engine.engine.inspect(name)).waiters === queued);
  return { result };
}

describe('waiting', () => {
  it('serves waiters first come, first served, across engines, each with a larger fencing token', async () => {
    const name = uniqueName();
    const holder = (await a.engine.acquire(request(name)))!;
    const order: string[] = [];
    const waiters = [];
    for (const [i, engine] of [b, a, b].entries()) {
      const { result } = await queue(engine, name, i + 1, { owner: `w${i}` });
      waiters.push(result.then((g) => (order.push(`w${i}`), g!)));
    }
    let token = holder.token;
    let fence = BigInt(holder.fencingToken);
    let releaser = a;
    for (let i = 0; i < 3; i++) {
      await releaser.engine.release(name, token);
      const grant = await waiters[i];
      expect(order).toEqual(['w0', 'w1', 'w2'].slice(0, i + 1));
      expect(BigInt(grant.fencingToken)).toBeGreaterThan(fence);
      token = grant.token;
      fence = BigInt(grant.fencingToken);
      releaser = [b, a, b][i];
    }
    await b.engine.release(name, token);
  });

  it("wakes another engine's waiter with the release's publish, not by polling", async () => {
    const name = uniqueName();
    const holder = (await a.engine.acquire(request(name)))!;
    const { result } = await queue(b, name, 1);
    await a.engine.release(name, holder.token);
    // Granted long before the waiter's own next look (a minute) or its deadline (20 s).
    expect(await result).not.toBeNull();
  });

  it('a lock freed without a publish (state deleted behind its back) wakes nobody: the negative control', async () => {
    const name = uniqueName();
    await a.engine.acquire(request(name));
    const { result } = await queue(b, name, 1, { waitMs: 1500 });
    await deleteLockState(redis, name);
    expect(await result).toBeNull(); // the deadline came first: nothing told the waiter
  });

  it('a release on the same engine hands the lock to its own waiter in the reply', async () => {
    const name = uniqueName();
    const holder = (await a.engine.acquire(request(name)))!;
    const { result } = await queue(a, name, 1);
    await a.engine.release(name, holder.token);
    const grant = await result;
    expect(grant).not.toBeNull();
    expect((await b.engine.inspect(name)).holders.map((h) => h.fencingToken)).toEqual([grant!.fencingToken]);
  });

  it('a wait that runs out resolves null and leaves the queue', async () => {
    const name = uniqueName();
    await a.engine.acquire(request(name));
    expect(await b.engine.acquire(request(name, { waitMs: 300 }))).toBeNull();
    expect((await a.engine.inspect(name)).waiters).toBe(0);
  });
});

describe('cancellation with an AbortSignal', () => {
  it('an aborted waiter resolves null at once, leaves the queue, and is never handed the lock', async () => {
    const name = uniqueName();
    const holder = (await a.engine.acquire(request(name)))!;
    const abort = new AbortController();
    const { result } = await queue(b, name, 1, {}, abort.signal);
    const { result: second } = await queue(b, name, 2);
    abort.abort();
    expect(await result).toBeNull();
    expect((await a.engine.inspect(name)).waiters).toBe(1);
    // The release goes to the waiter behind it, not to the one that left.
    await a.engine.release(name, holder.token);
    const grant = await second;
    expect(grant).not.toBeNull();
    expect((await a.engine.inspect(name)).holders.map((h) => h.fencingToken)).toEqual([grant!.fencingToken]);
    expect(b.engine.stats().waiters).toBe(0);
  });

  it('a signal aborted before the call grants nothing, even on a free lock', async () => {
    const name = uniqueName();
    const abort = new AbortController();
    abort.abort();
    expect(await a.engine.acquire(request(name, { waitMs: 5000 }), abort.signal)).toBeNull();
    expect((await a.engine.inspect(name)).holders).toEqual([]);
    // Negative control: the same call without the abort is granted.
    expect(await a.engine.acquire(request(name, { waitMs: 5000 }))).not.toBeNull();
  });
});
