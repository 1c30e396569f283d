// Signed fences on every kind of grant, from a real server process with a key made by
// `holdfast fence-key new`, checked with Node's crypto against the keys the server publishes:
// what each fence states (namespace, lock, fencing token, lease end by Redis's clock), renewals
// re-signed later, session-kept locks stating no end, and no fence in the server's log.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secureChannel } from '../../clients/ts/credentials';
import type { LockServiceClient, HoldSetResponse, SetMember } from '../../gen/holdfast/v1/lock';
import { hashApiKey, newApiKey } from '../../src/auth/api-keys';
import { freePort } from '../../src/redis/embedded';
import { connect, type TestClient } from '../support/client';
import { uniqueName, startTestRedis, type TestRedis } from '../support/redis';
import { openSession } from '../support/session';
import { startServerProcess, type ServerProcess } from '../support/server';
import { fencesIn, fetchFenceKeys, getFenceKeys, newFenceKey, redisNowMs, verifyFence, type JwkSet } from './fences';

const adminKey = newApiKey(); // namespace default, role admin
const teamKey = newApiKey(); // namespace team-a, role lock
let dir: string;
let redis: TestRedis;
let server: ServerProcess;
let httpPort: number;
let ring: JwkSet;
let keyId: string;
const clients: TestClient[] = [];
/** Every fence a test saw: none may appear in the server's log. */
const seen: string[] = [];

function as(apiKey: string): TestClient {
  const client = connect(server.addr, { 'grpc.use_local_subchannel_pool': 1, ...(secureChannel({ apiKey }).options as object) });
  clients.push(client);
  return client;
}

function checked(fence: string) {
  seen.push(fence);
  return verifyFence(fence, ring);
}

/** A lease end stated by Redis's clock: between Redis's time before the call and after it, plus ttl (generous: a busy CI). */
function expectLeaseEnd(leaseEndMs: number | undefined, before: number, after: number, ttlMs: number) {
  expect(leaseEndMs).toBeDefined();
  expect(leaseEndMs!).toBeGreaterThanOrEqual(Math.floor(before) + ttlMs - 2000);
  expect(leaseEndMs!).toBeLessThanOrEqual(Math.ceil(after) + ttlMs + 5);
}

function unary<Res>(client: LockServiceClient, method: string, request: object): Promise<Res> {
  return new Promise((resolve, reject) =>
    (client as unknown as Record<string, (r: object, m: Metadata, cb: (e: Error | null, r: Res) => void) => void>)[method](
      request,
      new Metadata(),
      (err, res) => (err ? reject(err) : resolve(res)),
    ),
  );
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'holdfast-signing-'));
  ring = newFenceKey(join(dir, 'fence.pem'));
  keyId = ring.keys[0].kid;
  writeFileSync(
    join(dir, 'holdfast.yaml'),
    'api-keys:\n' +
      `  - { name: ops, sha256: ${hashApiKey(adminKey)}, namespace: default, role: admin }\n` +
      `  - { name: team, sha256: ${hashApiKey(teamKey)}, namespace: team-a, role: lock }\n`,
  );
  redis = await startTestRedis();
  httpPort = await freePort();
  server = await startServerProcess(redis.url, [
    '--config',
    join(dir, 'holdfast.yaml'),
    '--fence-signing-key',
    join(dir, 'fence.pem'),
    '--http-listen',
    `127.0.0.1:${httpPort}`,
    '--log-level',
    'debug',
  ]);
});

afterAll(async () => {
  clients.forEach((c) => c.close());
  await server?.stop();
  await redis?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('signed fences on every grant', () => {
  it("Acquire: the fence verifies with the published key and states the namespace, the lock, the fencing token and the lease end by Redis's clock", async () => {
    const published = await fetchFenceKeys(httpPort);
    expect(published.set).toEqual(ring);
    const name = uniqueName('signed/a b:é');
    const before = await redisNowMs(redis.client);
    const grant = await as(adminKey).acquire({ name, ttlMs: '7000' });
    const after = await redisNowMs(redis.client);
    expect(grant.acquired).toBe(true);
    const fence = checked(grant.signedFence);
    expect(fence).toMatchObject({ keyId, namespace: 'default', lock: name, token: grant.fencingToken });
    expectLeaseEnd(fence.leaseEndMs, before, after, 7000);
    expect(grant.signedFence.split(':')[3]).toBe(encodeURIComponent(name)); // the name as encodeURIComponent writes it
    // The verifier's negative control: the same fence with a higher token (a forger's edit) does not verify.
    const forged = grant.signedFence.replace(`:${grant.fencingToken}:`, `:${BigInt(grant.fencingToken) + 1n}:`);
    expect(forged).not.toBe(grant.signedFence);
    expect(() => verifyFence(forged, ring)).toThrow('the signature does not verify');
  });

  it('Renew re-signs the grant with the later lease end', async () => {
    const client = as(adminKey);
    const name = uniqueName('signed');
    const grant = await client.acquire({ name, ttlMs: '5000' });
    const before = await redisNowMs(redis.client);
    const renewed = await client.renew({ name, token: grant.token, ttlMs: '20000' });
    const after = await redisNowMs(redis.client);
    const first = checked(grant.signedFence);
    const second = checked(renewed.signedFence);
    expect(second).toMatchObject({ keyId, namespace: 'default', lock: name, token: grant.fencingToken });
    expectLeaseEnd(second.leaseEndMs, before, after, 20_000);
    expect(second.leaseEndMs!).toBeGreaterThan(first.leaseEndMs!);
  });

  it('Hold: the acquired fence and every renewal signed, each renewal with a later lease end', async () => {
    const name = uniqueName('signed');
    const hold = as(adminKey).hold({ name, ttlMs: '1200' });
    const acquired = (await hold.next((e) => !!e.acquired)).acquired!;
    const first = checked(acquired.signedFence);
    expect(first).toMatchObject({ lock: name, token: acquired.fencingToken, namespace: 'default' });
    const renewals = () => hold.events.filter((e) => e.renewed).map((e) => e.renewed!);
    await hold.next(() => renewals().length >= 2);
    const ends = renewals()
      .slice(0, 2)
      .map((r) => {
        expect(r.signedFences).toHaveLength(1);
        const fence = checked(r.signedFences[0]);
        expect(fence).toMatchObject({ lock: name, token: acquired.fencingToken, namespace: 'default' });
        return fence.leaseEndMs!;
      });
    expect(ends[0]).toBeGreaterThan(first.leaseEndMs!);
    expect(ends[1]).toBeGreaterThan(ends[0]);
    hold.call.cancel();
  });

  it("AcquireSet and HoldSet: every member signed; a HoldSet renewal re-signs every member, in the set's canonical order", async () => {
    const client = as(adminKey);
    const names = [uniqueName('signed-z'), uniqueName('signed-b'), uniqueName('signed-m')];
    const canonical = [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const before = await redisNowMs(redis.client);
    const set = await unary<{ acquired: boolean; members: SetMember[] }>(client.client, 'acquireSet', {
      names,
      owner: '',
      ttlMs: '6000',
      waitTimeoutMs: '0',
      mode: 0,
      value: '',
    });
    const after = await redisNowMs(redis.client);
    expect(set.acquired).toBe(true);
    for (const member of set.members) {
      const fence = checked(member.signedFence);
      expect(fence).toMatchObject({ lock: member.name, token: member.fencingToken, namespace: 'default' });
      expectLeaseEnd(fence.leaseEndMs, before, after, 6000);
    }

    const others = names.map((n) => `${n}-held`);
    const stream = client.client.holdSet({ names: others, owner: '', ttlMs: '1200', waitTimeoutMs: '0', mode: 0, maxHoldMs: '0', value: '' });
    const events: HoldSetResponse[] = [];
    const renewed = new Promise<HoldSetResponse>((resolve) =>
      stream.on('data', (e: HoldSetResponse) => {
        events.push(e);
        if (e.renewed) resolve(e);
      }),
    );
    stream.on('error', () => {});
    const renewal = (await renewed).renewed!;
    const members = events[0].acquired!.members;
    const firstEnds = new Map(members.map((m) => [m.name, checked(m.signedFence).leaseEndMs!]));
    expect(members.map((m) => checked(m.signedFence).token)).toEqual(members.map((m) => m.fencingToken));
    const fences = renewal.signedFences.map(checked);
    expect(fences.map((f) => f.lock)).toEqual([...others].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    expect(canonical.map((n) => `${n}-held`)).toEqual(fences.map((f) => f.lock));
    for (const fence of fences) {
      expect(fence.token).toBe(members.find((m) => m.name === fence.lock)!.fencingToken);
      expect(fence.leaseEndMs!).toBeGreaterThanOrEqual(firstEnds.get(fence.lock)!);
    }
    expect(fences.some((f) => f.leaseEndMs! > firstEnds.get(f.lock)!)).toBe(true);
    stream.cancel();
  });

  it('Session: acquire, renew and acquire_set state lease ends; the locks it keeps (hold, hold_set) state none, and its renewals are not re-signed', async () => {
    const session = openSession(as(adminKey).client);
    const [a, h, s1, s2, h1, h2] = ['a', 'h', 's1', 's2', 'h1', 'h2'].map((l) => uniqueName(`signed-session-${l}`));
    const before = await redisNowMs(redis.client);
    const acquired = (await session.op({ acquire: { name: a, ttlMs: '8000' } })).acquire!;
    const after = await redisNowMs(redis.client);
    expectLeaseEnd(checked(acquired.signedFence).leaseEndMs, before, after, 8000);
    expect(checked(acquired.signedFence)).toMatchObject({ lock: a, token: acquired.fencingToken });

    const renewed = (await session.op({ renew: { name: a, token: acquired.token, ttlMs: '30000' } })).renew!;
    expect(checked(renewed.signedFence).leaseEndMs!).toBeGreaterThan(checked(acquired.signedFence).leaseEndMs!);

    const held = (await session.op({ hold: { name: h, ttlMs: '5000' } })).hold!;
    expect(checked(held.signedFence)).toEqual({ keyId, namespace: 'default', lock: h, token: held.fencingToken, leaseEndMs: undefined });

    const set = (await session.op({ acquireSet: { names: [s1, s2], ttlMs: '8000' } })).acquireSet!;
    for (const m of set.members) expect(checked(m.signedFence)).toMatchObject({ lock: m.name, token: m.fencingToken, leaseEndMs: expect.any(Number) });

    const heldSet = (await session.op({ holdSet: { names: [h1, h2], ttlMs: '5000' } })).holdSet!;
    for (const m of heldSet.members)
      expect(checked(m.signedFence)).toEqual({ keyId, namespace: 'default', lock: m.name, token: m.fencingToken, leaseEndMs: undefined });
    session.call.end();
    await session.ended;
  });

  it('a grant in another namespace states that namespace', async () => {
    const name = uniqueName('signed');
    const grant = await as(teamKey).acquire({ name, ttlMs: '5000' });
    expect(checked(grant.signedFence)).toMatchObject({ namespace: 'team-a', lock: name, token: grant.fencingToken });
    const hold = as(teamKey).hold({ name: `${name}-h`, ttlMs: '5000' });
    expect(checked((await hold.next((e) => !!e.acquired)).acquired!.signedFence).namespace).toBe('team-a');
    hold.call.cancel();
  });

  it("GetFenceKeys and GET /fence-keys publish the signing key; /fence-keys needs no API key, GetFenceKeys keeps AdminService's rule (role admin)", async () => {
    const published = await fetchFenceKeys(httpPort);
    expect(published.contentType).toBe('application/json');
    expect(published.cacheControl).toMatch(/max-age=\d+/);
    const admin = new Metadata();
    admin.set('authorization', `Bearer ${adminKey}`);
    const answer = await getFenceKeys(server.addr, admin);
    expect(answer.signingKeyId).toBe(keyId);
    expect(answer.keys.map((k) => ({ keyId: k.keyId, algorithm: k.algorithm, x: Buffer.from(k.publicKey).toString('base64url') }))).toEqual([
      { keyId, algorithm: 'Ed25519', x: ring.keys[0].x },
    ]);
    await expect(getFenceKeys(server.addr)).rejects.toMatchObject({ code: status.UNAUTHENTICATED });
    const team = new Metadata();
    team.set('authorization', `Bearer ${teamKey}`);
    await expect(getFenceKeys(server.addr, team)).rejects.toMatchObject({ code: status.PERMISSION_DENIED });
  });

  it('no fence (nor its signature) appears in the server log at debug level; the check finds one planted (negative control)', async () => {
    expect(seen.length).toBeGreaterThan(15);
    expect(fencesIn(server.logs, seen)).toEqual([]);
    const planted = [...server.logs, `{"level":20,"msg":"granted","fence":"${seen[3]}"}`];
    expect(fencesIn(planted, seen)).toEqual([seen[3]]);
    const signatureOnly = [...server.logs, `sig=${seen[5].slice(seen[5].lastIndexOf(':') + 1)}`];
    expect(fencesIn(signatureOnly, seen)).toEqual([seen[5]]);
    expect(server.logs.join('\n')).toContain(keyId); // the startup line names the key id
    expect(server.logs.join('\n')).not.toContain('PRIVATE KEY');
  });
});
