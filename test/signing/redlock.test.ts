// Signed fences in Redlock mode: three independent masters, each with its own clock, so the lease
// end a fence states is counted on the server's clock (as Redlock counts a grant's validity).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/redis/embedded';
import { connect, type TestClient } from '../support/client';
import { healthStatus } from '../support/health';
import { uniqueName } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';
import { getFenceKeys, newFenceKey, verifyFence, type JwkSet } from './fences';

let root: string;
const nodes: EmbeddedRedis[] = [];
let server: ServerProcess;
let client: TestClient;
let ring: JwkSet;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'holdfast-signing-redlock-'));
  ring = newFenceKey(join(root, 'fence.pem'));
  nodes.push(...(await Promise.all([0, 1, 2].map((i) => startEmbeddedRedis({ dataDir: join(root, `node-${i}`), args: ['--save', ''] })))));
  // Short leases: a new deployment's masters each sit out one quarantine of about max-ttl-ms.
  server = await startServerProcess(undefined, [
    '--redlock',
    nodes.map((n) => n.url).join(','),
    '--max-ttl-ms',
    '3000',
    '--default-ttl-ms',
    '1000',
    '--quarantine-margin-ms',
    '300',
    '--redlock-node-timeout-ms',
    '300',
    '--fence-signing-key',
    join(root, 'fence.pem'),
  ]);
  client = connect(server.addr);
  await waitFor('health SERVING', async () => (await healthStatus(server.addr)) === 'SERVING', 20_000, 20);
}, 60_000);

afterAll(async () => {
  client?.close();
  await server?.stop();
  await Promise.all(nodes.map((n) => n.stop()));
  rmSync(root, { recursive: true, force: true });
});

describe('signed fences in Redlock mode', () => {
  it("Acquire, Renew and every Hold renewal are signed; the lease end is the grant's validity on the server's clock", async () => {
    const name = uniqueName('redlock-signed');
    const before = Date.now();
    const grant = await client.acquire({ name, ttlMs: '3000' });
    const after = Date.now();
    expect(grant.acquired).toBe(true);
    const fence = verifyFence(grant.signedFence, ring);
    expect(fence).toMatchObject({ keyId: ring.keys[0].kid, namespace: 'default', lock: name, token: grant.fencingToken });
    // Redlock's validity: the ttl less the vote's time and the clock drift allowance, never more.
    expect(fence.leaseEndMs!).toBeLessThanOrEqual(after + 3000 + 5);
    expect(fence.leaseEndMs!).toBeGreaterThanOrEqual(before + 3000 - 2000);
    // Renew is signed with the fencing token a majority of the masters report for the grant.
    const renewedFence = verifyFence((await client.renew({ name, token: grant.token, ttlMs: '3000' })).signedFence, ring);
    expect(renewedFence).toMatchObject({ lock: name, token: grant.fencingToken });
    expect(renewedFence.leaseEndMs!).toBeGreaterThanOrEqual(fence.leaseEndMs!);

    const hold = client.hold({ name: `${name}-h`, ttlMs: '900' });
    const acquired = (await hold.next((e) => !!e.acquired)).acquired!;
    const first = verifyFence(acquired.signedFence, ring);
    const renewed = (await hold.next((e) => !!e.renewed)).renewed!;
    expect(renewed.signedFences).toHaveLength(1);
    const again = verifyFence(renewed.signedFences[0], ring);
    expect(again).toMatchObject({ lock: `${name}-h`, token: acquired.fencingToken });
    expect(again.leaseEndMs!).toBeGreaterThan(first.leaseEndMs!);
    hold.call.cancel();
    expect((await getFenceKeys(server.addr)).signingKeyId).toBe(ring.keys[0].kid);
  });
});
