// Engine tier: the lock engine on a real redis-server, no gRPC server. Grants, releases,
// reentrancy, shared holds and fencing tokens, through the engine's public methods only.
import { beforeAll, describe, expect, it } from 'vitest';
import type { AcquireParams } from '../../src/engine/types';
import { Mode } from '../../src/engine/types';
import { lockRequest, useEngines, type TestEngine } from '../support/engine';
import { deleteLockState, uniqueName, type TestRedis } from '../support/redis';

let redis: TestRedis;
let a: TestEngine;
let b: TestEngine;

const env = useEngines(2, { maxTtlMs: 60_000 });
beforeAll(() => void ([redis, a, b] = [env.redis, ...env.engines]));

const request = (name: string, extra: Partial<AcquireParams> = {}) => lockRequest(name, 10_000, extra);

describe('grant and release', () => {
  it('grants one holder at a time, with a secret token, and frees the lock on release', async () => {
    const name = uniqueName();
    const grant = await a.engine.acquire(request(name));
    expect(grant).toMatchObject({ holdCount: 1, ttlMs: 10_000 });
    expect(grant!.token.length).toBeGreaterThanOrEqual(16);
    // The other engine (another server) is refused while it is held: null, not an error.
    expect(await b.engine.acquire(request(name))).toBeNull();
    const info = await b.engine.inspect(name);
    expect(info.holders).toHaveLength(1);
    expect(info.holders[0].fencingToken).toBe(grant!.fencingToken);
    expect(await a.engine.release(name, grant!.token)).toMatchObject({ released: true, holdCount: 0 });
    expect((await b.engine.inspect(name)).holders).toEqual([]);
    expect(await b.engine.acquire(request(name))).not.toBeNull();
  });

  it('refuses a wrong or released token with not_found naming the lock, and renews nothing with it', async () => {
    const name = uniqueName();
    const grant = (await a.engine.acquire(request(name)))!;
    await expect(a.engine.release(name, 'not-a-token')).rejects.toMatchObject({ kind: 'not_found', message: expect.stringContaining(name) });
    await expect(a.engine.renew(name, 'not-a-token', 1000)).rejects.toMatchObject({ kind: 'not_found' });
    await a.engine.release(name, grant.token);
    await expect(b.engine.release(name, grant.token)).rejects.toMatchObject({ kind: 'not_found' });
  });

  it('refuses a lease longer than the longest, naming ttl_ms', async () => {
    await expect(a.engine.acquire(request(uniqueName(), { ttlMs: 60_001 }))).rejects.toMatchObject({
      kind: 'invalid',
      message: expect.stringContaining('ttl_ms 60001'),
    });
    expect(await a.engine.acquire(request(uniqueName(), { ttlMs: 60_000 }))).not.toBeNull();
  });

  it('frees the lock when the lease runs out, and the expired token renews nothing', async () => {
    const name = uniqueName();
    const grant = (await a.engine.acquire(request(name, { ttlMs: 200 })))!;
    // A waiter on the other engine gets it once the lease has run out (the line looks again then).
    const next = await b.engine.acquire(request(name, { waitMs: 10_000 }));
    expect(next).not.toBeNull();
    await expect(a.engine.renew(name, grant.token, 1000)).rejects.toMatchObject({ kind: 'not_found' });
  });
});

describe('reentrancy', () => {
  it('an owner re-enters its own grant (same token, counted holds); another owner waits its turn', async () => {
    const name = uniqueName();
    const first = (await a.engine.acquire(request(name, { owner: 'worker-1' })))!;
    const again = (await b.engine.acquire(request(name, { owner: 'worker-1' })))!;
    expect(again.token).toBe(first.token);
    expect(again.fencingToken).toBe(first.fencingToken);
    expect(again.holdCount).toBe(2);
    expect(await a.engine.acquire(request(name, { owner: 'worker-2' }))).toBeNull();
    expect(await a.engine.release(name, first.token)).toMatchObject({ released: false, holdCount: 1 });
    // Still held once: the other owner is still refused.
    expect(await a.engine.acquire(request(name, { owner: 'worker-2' }))).toBeNull();
    expect(await a.engine.release(name, first.token)).toMatchObject({ released: true, holdCount: 0 });
    expect(await a.engine.acquire(request(name, { owner: 'worker-2' }))).not.toBeNull();
  });

  it('without an owner there is no reentrancy (negative control)', async () => {
    const name = uniqueName();
    expect(await a.engine.acquire(request(name))).not.toBeNull();
    expect(await a.engine.acquire(request(name))).toBeNull();
  });

  it('shared holders share the lock; an exclusive request waits until the last one leaves', async () => {
    const name = uniqueName();
    const r1 = (await a.engine.acquire(request(name, { mode: Mode.SHARED })))!;
    const r2 = (await b.engine.acquire(request(name, { mode: Mode.SHARED })))!;
    expect(r2.token).not.toBe(r1.token);
    expect(await a.engine.acquire(request(name))).toBeNull();
    await a.engine.release(name, r1.token);
    expect(await a.engine.acquire(request(name))).toBeNull();
    await b.engine.release(name, r2.token);
    expect(await a.engine.acquire(request(name))).not.toBeNull();
  });
});

describe('fencing tokens', () => {
  it('every new grant of a lock gets a larger fencing token, across engines, expiry and lost state', async () => {
    const name = uniqueName();
    const seen: bigint[] = [];
    for (const engine of [a, b, a, b]) {
      const grant = (await engine.engine.acquire(request(name)))!;
      seen.push(BigInt(grant.fencingToken));
      await engine.engine.release(name, grant.token);
    }
    // A lease that ran out, then the lock's whole state deleted (a flush): still no step back.
    const expiring = (await a.engine.acquire(request(name, { ttlMs: 50 })))!;
    seen.push(BigInt(expiring.fencingToken));
    const after = (await b.engine.acquire(request(name, { waitMs: 10_000 })))!;
    seen.push(BigInt(after.fencingToken));
    await deleteLockState(redis, name);
    seen.push(BigInt((await a.engine.acquire(request(name)))!.fencingToken));
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThan(seen[i - 1]);
  });

  it('checkFencingToken says which token is live, and the latest one', async () => {
    const name = uniqueName();
    const old = (await a.engine.acquire(request(name)))!;
    await a.engine.release(name, old.token);
    const live = (await b.engine.acquire(request(name)))!;
    expect(await a.engine.checkFencingToken(name, live.fencingToken)).toMatchObject({ live: true, latestFencingToken: live.fencingToken });
    // Negative control: the older token is refused, and the latest is named.
    expect(await a.engine.checkFencingToken(name, old.fencingToken)).toMatchObject({ live: false, latestFencingToken: live.fencingToken });
  });
});
