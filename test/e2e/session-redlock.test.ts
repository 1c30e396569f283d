// Sessions in Redlock mode (three real, independent redis-server masters): operations run on the
// Redlock engine as their unary twins do, and locks held under a session are kept by its lease
// keeper, renewed for the whole session, and given back on a clean end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/redis/embedded';
import { connect, type TestClient } from '../support/client';
import { healthStatus } from '../support/health';
import { uniqueName } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { openSession } from '../support/session';
import { waitFor } from '../support/wait';

let root: string;
const nodes: EmbeddedRedis[] = [];
let server: ServerProcess;
let client: TestClient;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'holdfast-session-redlock-'));
  nodes.push(...(await Promise.all([0, 1, 2].map((i) => startEmbeddedRedis({ dataDir: join(root, `node-${i}`), args: ['--save', ''] })))));
  // Short leases: a new deployment's masters each sit out one quarantine of about max-ttl-ms.
  const args = [
    '--redlock',
    nodes.map((n) => n.url).join(','),
    '--max-ttl-ms',
    '1000',
    '--default-ttl-ms',
    '1000',
    '--quarantine-margin-ms',
    '300',
    '--redlock-node-timeout-ms',
    '300',
  ];
  server = await startServerProcess(undefined, args);
  client = connect(server.addr);
  await waitFor('health SERVING', async () => (await healthStatus(server.addr)) === 'SERVING', 20_000, 20);
}, 60_000);
afterAll(async () => {
  client?.close();
  await server?.stop();
  await Promise.all(nodes.map((n) => n.stop()));
  rmSync(root, { recursive: true, force: true });
});

describe('sessions in Redlock mode', () => {
  it('hold a lock set through many renewals, reported with one message per tick, and give it back with release_set', async () => {
    const names = [uniqueName(), uniqueName()];
    const s = openSession(client.client);
    const set = (await s.op({ holdSet: { names, ttlMs: '600' } })).holdSet!;
    expect(set.members.map((m) => m.name).sort()).toEqual([...names].sort());
    await s.next(() => s.received.filter((r) => r.renewed?.locks === 2).length >= 5);
    for (const member of set.members) {
      expect((await s.op({ inspect: { name: member.name } })).inspect?.holders).toMatchObject([{ fencingToken: member.fencingToken }]);
    }
    const members = set.members.map(({ name, token, holdId }) => ({ name, token, holdId }));
    expect((await s.op({ releaseSet: { members } })).releaseSet).toEqual({ released: 2, notHeld: [] });
    for (const name of names) expect((await s.op({ inspect: { name } })).inspect?.holders).toEqual([]);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  it('hold locks through many renewals, answer operations by id, and give the locks back on close', async () => {
    const names = [uniqueName(), uniqueName()];
    const s = openSession(client.client);
    for (const name of names) expect((await s.op({ hold: { name, ttlMs: '600' } })).hold?.holdCount).toBe(1);
    await s.next(() => s.received.filter((r) => r.renewed?.locks === 2).length >= 5);
    for (const name of names) expect((await s.op({ inspect: { name } })).inspect?.holders).toHaveLength(1);
    const other = uniqueName();
    const grant = (await s.op({ acquire: { name: other, ttlMs: '1000' } })).acquire!;
    expect(grant.acquired).toBe(true);
    expect((await s.op({ release: { name: other, token: grant.token } })).release?.released).toBe(true);
    expect(s.received.some((r) => r.lost)).toBe(false);
    const waiter = client.acquire({ name: names[0], waitTimeoutMs: '10000' });
    await waitFor('the waiter to queue', async () => (await client.inspect({ name: names[0] })).waiters === 1);
    s.send({ opId: '9', close: {} });
    expect((await s.ended).code).toBe(status.OK);
    expect((await waiter).acquired).toBe(true);
  });
});
