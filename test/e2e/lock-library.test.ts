// The lock functions live in Redis as one library (src/redis/functions.ts). Redis may lose it (a
// restart without persistence, a new node, FUNCTION FLUSH): every way the server calls it must
// load it again by itself. FUNCTION FLUSH stands in for the loss here, as a restart would also
// start a failover quarantine that holds grants back.
import { beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { luaDir } from '../../src/redis/scripts';
import { LockLibrary, lockLibrary } from '../../src/redis/functions';
import { startEmbeddedRedis } from '../../src/redis/embedded';
import { connect, type TestClient } from '../support/client';
import { startTestRedis, uniqueName, type TestRedis } from '../support/redis';
import { useServers } from '../support/fixture';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

let redis: TestRedis;
let server: ServerProcess;
let client: TestClient;

const env = useServers(1);
beforeAll(() => void ([redis, server, client] = [env.redis, env.servers[0], env.clients[0]]));

/** Flushes the library and shows that Redis no longer has it (the control: a direct call fails). */
async function loseLibrary(on: TestRedis = redis): Promise<void> {
  await on.client.call('FUNCTION', 'FLUSH', 'SYNC');
  await expect(on.client.fcall(lockLibrary().functionName('inspect'), 3, 'a{x}', 'b{x}', 'c{x}')).rejects.toThrow(/Function not found/);
}

async function libraryNames(): Promise<string[]> {
  const list = (await redis.client.call('FUNCTION', 'LIST')) as unknown[][];
  return list.map((library) => String(library[1]));
}

describe('the lock library', () => {
  it('holds every operation as a function, under a name that is a hash of its text', async () => {
    const library = lockLibrary();
    await library.load(redis.client);
    const list = (await redis.client.call('FUNCTION', 'LIST', 'LIBRARYNAME', library.name)) as unknown[][];
    const functions = (list[0][5] as unknown[][]).map((f) => String(f[1]));
    for (const script of ['acquire', 'release', 'renew', 'claim', 'dequeue', 'inspect', 'checkFencingToken', 'requestId', 'setValue'] as const) {
      expect(functions).toContain(library.functionName(script));
    }
    expect(functions).toContain(library.functionName('acquire', true));
    expect(library.name).toMatch(/^holdfast_[0-9a-f]{12}$/);
  });

  it('is loaded again when Redis lost it, by the next call', async () => {
    await loseLibrary();
    const name = uniqueName('lib');
    const grant = await client.acquire({ name, ttlMs: '10000' });
    expect(grant.acquired).toBe(true);
    expect(await libraryNames()).toEqual([lockLibrary().name]);
    expect((await client.release({ name, token: grant.token })).released).toBe(true);
  });

  it('is loaded again by the renewals of a Hold, which keeps its lock meanwhile', async () => {
    const name = uniqueName('lib');
    const stream = client.hold({ name, ttlMs: '1500' });
    const acquired = (await stream.next((e) => !!e.acquired)).acquired!;
    await loseLibrary();
    // The first renewal after the loss fails and loads the library; a later one renews.
    const renewals = () => stream.events.filter((e) => e.renewed).length;
    const before = renewals();
    await waitFor('a renewal after the library was lost', () => renewals() > before, 10_000);
    expect(stream.events.some((e) => e.lost)).toBe(false);
    expect(await libraryNames()).toEqual([lockLibrary().name]);
    const info = await client.inspect({ name });
    expect(info.holders.map((h) => h.fencingToken)).toEqual([acquired.fencingToken]);
    stream.call.cancel();
  });

  it('sits beside the library of another holdfast version on the same Redis', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'holdfast-lua-'));
    try {
      cpSync(luaDir(), dir, { recursive: true });
      const events = join(dir, 'includes', 'events.lua');
      writeFileSync(events, `${readFileSync(events, 'utf8')}\n-- another version\n`);
      const other = new LockLibrary(dir);
      expect(other.name).not.toBe(lockLibrary().name);
      await other.load(redis.client);
      await lockLibrary().load(redis.client);
      expect((await libraryNames()).sort()).toEqual([lockLibrary().name, other.name].sort());
      const grant = await client.acquire({ name: uniqueName('lib'), ttlMs: '10000' });
      expect(grant.acquired).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the lock library with replica acknowledgement', () => {
  it('is loaded again by a grant whose WAIT shares its pipeline (--sync-replicas)', async () => {
    const master = await startTestRedis();
    const dataDir = mkdtempSync(join(tmpdir(), 'holdfast-replica-'));
    const replica = await startEmbeddedRedis({ dataDir, args: ['--save', '', '--replicaof', '127.0.0.1', String(master.port)] });
    let synced: ServerProcess | undefined;
    let syncedClient: TestClient | undefined;
    try {
      await waitFor('the replica online', async () => /state=online/.test(await master.client.info('replication')), 15_000, 50);
      await master.client.config('SET', 'min-replicas-to-write', '1'); // as --sync-replicas asks
      synced = await startServerProcess(master.url, ['--sync-replicas', '1']);
      syncedClient = connect(synced.addr);
      expect((await syncedClient.acquire({ name: uniqueName('lib'), ttlMs: '10000' })).acquired).toBe(true);
      await loseLibrary(master);
      const grant = await syncedClient.acquire({ name: uniqueName('lib'), ttlMs: '10000' });
      expect(grant.acquired).toBe(true);
      expect(await master.client.call('FUNCTION', 'LIST', 'LIBRARYNAME', lockLibrary().name)).toHaveLength(1);
    } finally {
      syncedClient?.close();
      await synced?.stop();
      await replica.stop();
      rmSync(dataDir, { recursive: true, force: true });
      await master.cleanup();
    }
  }, 60_000);
});
