// Engine tier: lease keeping. keep() renews a grant until it is let go, abandoned or lost;
// renew() extends a live grant; a lease whose grant vanished is reported lost, with why.
import { beforeAll, describe, expect, it } from 'vitest';
import type { AcquireParams } from '../../src/engine/types';
import { keepHold, lockRequest, useEngines, type TestEngine } from '../support/engine';
import { deleteLockState, uniqueName, type TestRedis } from '../support/redis';
import { waitFor } from '../support/wait';

let redis: TestRedis;
let a: TestEngine;
let b: TestEngine;

const env = useEngines(2);
beforeAll(() => void ([redis, a, b] = [env.redis, ...env.engines]));

const request = (name: string, extra: Partial<AcquireParams> = {}) => lockRequest(name, 600, extra);
const hold = keepHold;

describe('keep', () => {
  it('keeps a lease alive well past its ttl, and frees the lock at once when let go', async () => {
    const name = uniqueName();
    const kept = await hold(a, name, 600);
    await waitFor('five renewals (three leases long)', () => kept.renewals.length >= 5);
    expect(kept.renewals.every((left) => left === 600)).toBe(true);
    expect((await b.engine.inspect(name)).holders.map((h) => h.fencingToken)).toEqual([kept.grant.fencingToken]);
    expect(await b.engine.acquire(request(name))).toBeNull();
    await kept.letGo();
    expect(await b.engine.acquire(request(name))).not.toBeNull();
    expect(a.engine.stats().keptLeases).toBe(0);
  });

  it('a grant nobody keeps runs out within its ttl (negative control)', async () => {
    const name = uniqueName();
    await a.engine.acquire(request(name, { ttlMs: 300 }));
    expect(await b.engine.acquire(request(name, { waitMs: 10_000 }))).not.toBeNull();
  });

  it('an abandoned hold stays closed until its lease has run out, then frees', async () => {
    const name = uniqueName();
    const kept = await hold(a, name, 1500);
    await kept.abandon();
    const info = await b.engine.inspect(name);
    expect(info.holders).toHaveLength(1);
    expect(info.holders[0].holdCount).toBe(0); // vanished: nobody holds it, its lease still runs
    expect(await b.engine.acquire(request(name))).toBeNull();
    expect(await b.engine.acquire(request(name, { waitMs: 10_000 }))).not.toBeNull();
  });

  it('reports a lease lost as expired when its grant vanished, and as taken when someone else holds it now', async () => {
    const expired = uniqueName();
    const gone = await hold(a, expired, 600);
    await deleteLockState(redis, expired);
    expect(await gone.lost).toMatchObject({ reason: 'expired', message: expect.stringContaining('grant is gone') });

    const taken = uniqueName();
    const stolen = await hold(a, taken, 3000);
    // Right after a renewal (the next is a second away), so that none runs between these two.
    await waitFor('a renewal', () => stolen.renewals.length >= 1);
    await deleteLockState(redis, taken);
    const thief = await b.engine.acquire(request(taken, { ttlMs: 10_000 }));
    expect(thief).not.toBeNull();
    expect(await stolen.lost).toMatchObject({ reason: 'taken', message: expect.stringContaining('someone else holds') });
    expect(a.engine.stats().keptLeases).toBe(0);
  });

  it('ends a hold at its max hold time, as max_hold', async () => {
    const name = uniqueName();
    const kept = await hold(a, name, 600, { maxHoldMs: 1000 });
    expect(await kept.lost).toMatchObject({ reason: 'max_hold', message: expect.stringContaining('1000 ms') });
  });
});

describe('renew', () => {
  it('extends a live grant to the ttl asked for, from any engine', async () => {
    const name = uniqueName();
    const grant = (await a.engine.acquire(request(name, { ttlMs: 1000 })))!;
    expect(await b.engine.renew(name, grant.token, 30_000)).toEqual({ ttlMs: 30_000, fencingToken: grant.fencingToken });
    expect((await a.engine.inspect(name)).holders[0].ttlMs).toBeGreaterThan(1000);
  });

  it('refuses a renewal past the longest lease, naming ttl_ms, and one of a grant that ran out', async () => {
    const name = uniqueName();
    const grant = (await a.engine.acquire(request(name, { ttlMs: 100 })))!;
    await expect(a.engine.renew(name, grant.token, 60_001)).rejects.toMatchObject({ kind: 'invalid', message: expect.stringContaining('ttl_ms') });
    await waitFor('the lease to run out', async () => (await a.engine.inspect(name)).holders.length === 0);
    await expect(a.engine.renew(name, grant.token, 1000)).rejects.toMatchObject({ kind: 'not_found', message: expect.stringContaining(name) });
  });
});
