import { randomUUID } from 'node:crypto';
// The core LockService over real gRPC, against real holdfast server processes on a real redis-server.
import { status } from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { LockMode } from '../../gen/holdfast/v1/lock';
import type { TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';

const env = useServers(2);
let a: TestClient;
let b: TestClient;
beforeAll(() => void ([a, b] = env.clients));

describe('acquire and release', () => {
  it('grants with a secret token, refuses others with acquired=false, frees on release', async () => {
    const name = uniqueName();
    const first = await a.acquire({ name, ttlMs: '10000' });
    expect(first.acquired).toBe(true);
    expect(Buffer.from(first.token, 'base64url').length).toBeGreaterThanOrEqual(16);
    expect(BigInt(first.fencingToken)).toBeGreaterThan(0n);
    expect(first.ttlMs).toBe('10000');
    expect(first.holdCount).toBe(1);
    const second = await b.acquire({ name });
    expect(second).toMatchObject({ acquired: false, token: '' });
    expect(await a.release({ name, token: first.token })).toEqual({ released: true, holdCount: 0 });
    expect((await b.acquire({ name })).acquired).toBe(true);
  });

  it('uses the server default ttl for ttl_ms 0', async () => {
    const grant = await a.acquire({ name: uniqueName() });
    expect(grant.ttlMs).toBe('30000');
  });

  it('refuses wrong, released and other holders’ tokens with NOT_FOUND naming the lock', async () => {
    const name = uniqueName();
    const grant = await a.acquire({ name });
    await expect(a.release({ name, token: 'not-a-real-token' })).rejects.toMatchObject({ code: status.NOT_FOUND, details: expect.stringContaining(name) });
    await expect(a.renew({ name, token: 'not-a-real-token', ttlMs: '1000' })).rejects.toMatchObject({ code: status.NOT_FOUND });
    const other = uniqueName();
    const otherGrant = await b.acquire({ name: other });
    await expect(a.release({ name, token: otherGrant.token })).rejects.toMatchObject({ code: status.NOT_FOUND });
    await a.release({ name, token: grant.token });
    await expect(a.release({ name, token: grant.token })).rejects.toMatchObject({ code: status.NOT_FOUND });
    expect((await a.inspect({ name: other })).holders).toHaveLength(1);
  });

  it('expiry frees the lock, and the expired token can neither renew nor release', async () => {
    const name = uniqueName();
    const grant = await a.acquire({ name, ttlMs: '150' });
    const waiter = await b.acquire({ name, waitTimeoutMs: '5000' });
    expect(waiter.acquired).toBe(true);
    await expect(a.renew({ name, token: grant.token, ttlMs: '0' })).rejects.toMatchObject({ code: status.NOT_FOUND });
    await expect(a.release({ name, token: grant.token })).rejects.toMatchObject({ code: status.NOT_FOUND });
  });

  it('renews a live grant, and never shortens its lease', async () => {
    const name = uniqueName();
    const grant = await a.acquire({ name, ttlMs: '1000' });
    expect((await b.renew({ name, token: grant.token, ttlMs: '60000' })).ttlMs).toBe('60000');
    // A client may be counting on the 60 s already granted: a shorter renewal keeps it.
    const kept = Number((await a.renew({ name, token: grant.token, ttlMs: '0' })).ttlMs);
    expect(kept).toBeGreaterThan(50_000);
    expect(kept).toBeLessThanOrEqual(60_000);
    const [holder] = (await a.inspect({ name })).holders;
    expect(Number(holder.ttlMs)).toBeGreaterThan(50_000);
  });
});

describe('reentrancy and idempotency', () => {
  it('an owner re-enters with the same token and fencing token, and frees at hold count 0', async () => {
    const name = uniqueName();
    const first = await a.acquire({ name, owner: 'worker-1' });
    const again = await b.acquire({ name, owner: 'worker-1' });
    expect(again).toMatchObject({ acquired: true, token: first.token, fencingToken: first.fencingToken, holdCount: 2 });
    expect((await a.acquire({ name, owner: 'worker-2' })).acquired).toBe(false);
    expect(await a.release({ name, token: first.token })).toEqual({ released: false, holdCount: 1 });
    expect((await a.acquire({ name, owner: 'worker-2' })).acquired).toBe(false);
    expect(await a.release({ name, token: first.token })).toEqual({ released: true, holdCount: 0 });
    expect((await a.acquire({ name, owner: 'worker-2' })).acquired).toBe(true);
  });
});

describe('request_id', () => {
  const requestId = () => `req-${randomUUID()}`;
  const refused = { code: status.FAILED_PRECONDITION, details: expect.stringContaining('request_id') };

  it('a retry by the same owner with the same parameters gets the live grant back, counted once', async () => {
    const name = uniqueName();
    const rid = requestId();
    const first = await a.acquire({ name, owner: 'alice', requestId: rid, ttlMs: '30000' });
    const retry = await b.acquire({ name, owner: 'alice', requestId: rid, ttlMs: '30000' });
    expect(retry).toMatchObject({ acquired: true, token: first.token, fencingToken: first.fencingToken, holdCount: 1 });
    expect(Number(retry.ttlMs)).toBeLessThanOrEqual(30_000); // the lease left, counted from the retry
    expect((await a.inspect({ name })).holders[0].holdCount).toBe(1);
    // Without an owner too: the request id alone names the request.
    const anonymous = requestId();
    const grant = await a.acquire({ name: uniqueName(), requestId: anonymous });
    expect(grant.acquired).toBe(true);
  });

  it('another owner reusing a request_id gets FAILED_PRECONDITION and no token', async () => {
    const name = uniqueName();
    const rid = requestId();
    const alice = await a.acquire({ name, owner: 'alice', requestId: rid });
    for (const mallory of [{ owner: 'mallory' }, { owner: 'mallory', mode: LockMode.LOCK_MODE_SHARED }, { owner: '' }]) {
      const attempt = b.acquire({ name, requestId: rid, ...mallory });
      await expect(attempt).rejects.toMatchObject(refused);
    }
    expect((await a.inspect({ name })).holders).toMatchObject([{ owner: 'alice', holdCount: 1 }]);
    expect(await a.release({ name, token: alice.token })).toEqual({ released: true, holdCount: 0 });
  });

  it('the same owner reusing a request_id with another mode, limit, ttl or name is refused', async () => {
    const name = uniqueName();
    const rid = requestId();
    await a.acquire({ name, owner: 'alice', requestId: rid, ttlMs: '30000' });
    await expect(a.acquire({ name, owner: 'alice', requestId: rid, ttlMs: '30000', mode: LockMode.LOCK_MODE_SHARED })).rejects.toMatchObject(refused);
    await expect(a.acquire({ name, owner: 'alice', requestId: rid, ttlMs: '30000', limit: 3 })).rejects.toMatchObject(refused);
    await expect(a.acquire({ name, owner: 'alice', requestId: rid, ttlMs: '20000' })).rejects.toMatchObject(refused);
    await expect(b.acquire({ name: uniqueName(), owner: 'alice', requestId: rid, ttlMs: '30000' })).rejects.toMatchObject(refused);
    expect((await a.inspect({ name })).holders).toMatchObject([{ owner: 'alice', holdCount: 1 }]);
  });

  it('a request_id shorter than 16 bytes is INVALID_ARGUMENT naming request_id', async () => {
    await expect(a.acquire({ name: uniqueName(), requestId: 'req-1' })).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining('request_id'),
    });
  });
});

describe('fencing tokens', () => {
  it('increase strictly across releases and expiries', async () => {
    const name = uniqueName();
    const fences: bigint[] = [];
    for (let i = 0; i < 4; i++) {
      const grant = await a.acquire({ name, ttlMs: '50', waitTimeoutMs: '3000' });
      expect(grant.acquired).toBe(true);
      fences.push(BigInt(grant.fencingToken));
      if (i % 2 === 0) await a.release({ name, token: grant.token }); // odd ones expire
    }
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]);
    expect(BigInt((await a.inspect({ name })).fencingToken)).toBe(fences[3]);
  });

  it('CheckFencingToken says whether a token belongs to a live holder', async () => {
    const name = uniqueName();
    const grant = await a.acquire({ name });
    expect(await b.checkFencingToken({ name, fencingToken: grant.fencingToken })).toMatchObject({
      live: true,
      mode: LockMode.LOCK_MODE_EXCLUSIVE,
      latestFencingToken: grant.fencingToken,
    });
    await a.release({ name, token: grant.token });
    const next = await a.acquire({ name });
    const stale = await b.checkFencingToken({ name, fencingToken: grant.fencingToken });
    expect(stale).toMatchObject({ live: false, latestFencingToken: next.fencingToken });
  });
});

describe('inspect', () => {
  it('shows holders with owner, fence, ttl, count and mode, and never a token', async () => {
    const name = uniqueName();
    const grant = await a.acquire({ name, owner: 'inspector', ttlMs: '20000' });
    const info = await b.inspect({ name });
    expect(info).toMatchObject({ name, waiters: 0, fencingToken: grant.fencingToken, limit: 1 });
    expect(info.holders).toEqual([
      { owner: 'inspector', fencingToken: grant.fencingToken, ttlMs: expect.any(String), holdCount: 1, mode: LockMode.LOCK_MODE_EXCLUSIVE, value: '' },
    ]);
    expect(Number(info.holders[0].ttlMs)).toBeGreaterThan(15000);
    expect(JSON.stringify(info)).not.toContain(grant.token);
    expect(await b.inspect({ name: uniqueName() })).toMatchObject({ holders: [], waiters: 0, fencingToken: '0', limit: 0 });
  });
});

describe('mutual exclusion', () => {
  it('two servers on one Redis never grant the same lock twice to many concurrent clients', async () => {
    const name = uniqueName();
    const clients = [a, b];
    let holders = 0;
    let maxHolders = 0;
    let grants = 0;
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const client = clients[i % 2];
        for (let round = 0; round < 5; round++) {
          const grant = await client.acquire({ name, ttlMs: '10000' });
          if (!grant.acquired) continue;
          grants++;
          holders++;
          maxHolders = Math.max(maxHolders, holders);
          await new Promise((r) => setImmediate(r));
          holders--;
          await client.release({ name, token: grant.token });
        }
      }),
    );
    expect(grants).toBeGreaterThan(0);
    expect(maxHolders).toBe(1);
  });
});

describe('bad input', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['empty name', { name: '' }, 'name'],
    ['name over 512 bytes', { name: 'é'.repeat(257) }, 'name'],
    ['name with a control character', { name: 'a\nb' }, 'name'],
    ['ttl below 10', { ttlMs: '5' }, 'ttl_ms'],
    ['ttl above a day', { ttlMs: '86400001' }, 'ttl_ms'],
    ['negative ttl', { ttlMs: '-1' }, 'ttl_ms'],
    ['huge ttl', { ttlMs: '9223372036854775807' }, 'ttl_ms'],
    ['negative wait', { waitTimeoutMs: '-1' }, 'wait_timeout_ms'],
    ['wait above a day', { waitTimeoutMs: '86400001' }, 'wait_timeout_ms'],
    ['unknown mode', { mode: 7 }, 'mode'],
    ['shared with a limit', { mode: LockMode.LOCK_MODE_SHARED, limit: 3 }, 'limit'],
    ['owner with a control character', { owner: 'x\u0000' }, 'owner'],
  ];
  for (const [label, fields, field] of cases) {
    it(`Acquire: ${label} -> INVALID_ARGUMENT naming ${field}`, async () => {
      const name = (fields.name as string | undefined) ?? uniqueName();
      const keysBefore = await env.redis.client.dbsize();
      await expect(a.acquire({ ...fields, name })).rejects.toMatchObject({
        code: status.INVALID_ARGUMENT,
        details: expect.stringContaining(field),
      });
      expect(await env.redis.client.dbsize()).toBeLessThanOrEqual(keysBefore); // nothing reached Redis
    });
  }

  it('Release, Renew, Inspect and CheckFencingToken check their fields too', async () => {
    await expect(a.release({ name: '', token: 'x' })).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: expect.stringContaining('name') });
    await expect(a.release({ name: 'n', token: '' })).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: expect.stringContaining('token') });
    await expect(a.renew({ name: 'n', token: 't', ttlMs: '3' })).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining('ttl_ms'),
    });
    await expect(a.inspect({ name: 'x'.repeat(513) })).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: expect.stringContaining('name') });
    await expect(a.checkFencingToken({ name: 'n', fencingToken: '0' })).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining('fencing_token'),
    });
  });
});
