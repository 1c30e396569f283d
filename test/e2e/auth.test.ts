// API keys, roles and namespaces against a real server process configured by a real config file,
// with real gRPC clients sending `authorization: Bearer <key>`; reloads by SIGHUP and file change.
import { mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient, type ClientTls } from '../../clients/ts/index';
import { secureChannel } from '../../clients/ts/credentials';
import { AdminServiceClient, type GetServerStatsResponse } from '../../gen/holdfast/v1/admin';
import { hashApiKey, newApiKey } from '../../src/auth/api-keys';
import { lockKeys } from '../../src/engine/keys';
import { makeTestCerts, type TestCerts } from '../support/certs';
import { connect, type TestClient } from '../support/client';
import { healthStatus } from '../support/health';
import { useServers } from '../support/fixture';
import { uniqueName, type TestRedis } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

interface Key {
  name: string;
  namespace: string;
  role: 'read' | 'lock' | 'admin';
  key: string;
}

const key = (name: string, namespace: string, role: Key['role']): Key => ({ name, namespace, role, key: newApiKey() });
// Names of equal length, so that swapping one for another leaves the file's size as it was.
const keys = {
  aLock: key('a-lock', 'tenant-a', 'lock'),
  aRead: key('a-read', 'tenant-a', 'read'),
  aAdmin: key('a-admn', 'tenant-a', 'admin'),
  bLock: key('b-lock', 'tenant-b', 'lock'),
  cKeep: key('c-keep', 'tenant-c', 'lock'),
  cGone: key('c-gone', 'tenant-c', 'lock'),
  cAdds: key('c-adds', 'tenant-c', 'lock'),
  dFile: key('d-file', 'tenant-d', 'lock'),
  dflt: key('legacy', 'default', 'lock'),
};

function configText(list: Key[]): string {
  return `api-keys:\n${list.map((k) => `  - { name: ${k.name}, sha256: ${hashApiKey(k.key)}, namespace: ${k.namespace}, role: ${k.role} }\n`).join('')}`;
}

const firstKeys = [keys.aLock, keys.aRead, keys.aAdmin, keys.bLock, keys.cKeep, keys.cGone, keys.dflt];

let dir: string;
let file: string;
let redis: TestRedis;
let server: ServerProcess;
const clients: { close(): void }[] = [];

/** A raw test client that sends `apiKey` (none: no authorization metadata). */
function as(k?: Key | string): TestClient {
  const apiKey = typeof k === 'string' ? k : k?.key;
  const client = connect(server.addr, apiKey ? (secureChannel({ apiKey }).options as object) : {});
  clients.push(client);
  return client;
}

function serverStats(k: Key): Promise<GetServerStatsResponse> {
  const admin = new AdminServiceClient(server.addr, credentials.createInsecure(), secureChannel({ apiKey: k.key }).options);
  clients.push(admin);
  return new Promise((resolve, reject) => admin.getServerStats({}, new Metadata(), (err, res) => (err ? reject(err) : resolve(res))));
}

/** The status code a call failed with (fails the test if it succeeded). */
async function codeOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
  } catch (err) {
    return (err as ServiceError).code;
  }
  throw new Error('the call succeeded');
}

const env = useServers(1, () => {
  dir = mkdtempSync(join(tmpdir(), 'holdfast-auth-'));
  file = join(dir, 'holdfast.yaml');
  writeFileSync(file, configText(firstKeys));
  return ['--config', file];
});
beforeAll(() => void ([redis, server] = [env.redis, env.servers[0]]));
afterAll(() => {
  clients.forEach((c) => c.close());
  rmSync(dir, { recursive: true, force: true });
});

describe('authentication and roles', () => {
  it('answers a call without a key, or with a key it does not know, UNAUTHENTICATED', async () => {
    const name = uniqueName();
    expect(await codeOf(as().acquire({ name }))).toBe(status.UNAUTHENTICATED);
    expect(await codeOf(as().inspect({ name }))).toBe(status.UNAUTHENTICATED);
    expect(await codeOf(as(newApiKey()).acquire({ name }))).toBe(status.UNAUTHENTICATED);
    expect(await codeOf(as(`${keys.aLock.key}x`).release({ name, token: 'x' }))).toBe(status.UNAUTHENTICATED);
    const hold = as(newApiKey()).hold({ name });
    expect((await hold.ended).code).toBe(status.UNAUTHENTICATED);
    expect(hold.events).toEqual([]);
    // The refused calls took nothing.
    expect((await as(keys.aLock).inspect({ name })).holders).toEqual([]);
  });

  it('answers a role without the right PERMISSION_DENIED, and serves the rights it has', async () => {
    const name = uniqueName();
    const reader = as(keys.aRead);
    const locker = as(keys.aLock);
    expect(await codeOf(reader.acquire({ name }))).toBe(status.PERMISSION_DENIED);
    expect((await reader.hold({ name }).ended).code).toBe(status.PERMISSION_DENIED);
    const grant = await locker.acquire({ name, owner: 'worker-1', ttlMs: '60000' });
    expect(grant.acquired).toBe(true);
    expect(await codeOf(reader.release({ name, token: grant.token }))).toBe(status.PERMISSION_DENIED);
    expect(await codeOf(reader.renew({ name, token: grant.token, ttlMs: '0' }))).toBe(status.PERMISSION_DENIED);
    // read: Inspect and CheckFencingToken; lock includes them.
    expect((await reader.inspect({ name })).holders).toMatchObject([{ owner: 'worker-1' }]);
    expect((await reader.checkFencingToken({ name, fencingToken: grant.fencingToken })).live).toBe(true);
    expect((await locker.inspect({ name })).holders).toHaveLength(1);
    // AdminService is admin's alone.
    expect(await codeOf(serverStats(keys.aLock))).toBe(status.PERMISSION_DENIED);
    expect(await codeOf(serverStats(keys.aRead))).toBe(status.PERMISSION_DENIED);
    expect((await serverStats(keys.aAdmin)).keptLeases).toBeGreaterThanOrEqual(0);
    // admin may also lock, in its own namespace: the lock above is tenant-a's.
    expect((await as(keys.aAdmin).acquire({ name })).acquired).toBe(false);
    expect((await locker.release({ name, token: grant.token })).released).toBe(true);
  });

  it('serves health to anyone (probes send no key)', async () => {
    expect(await healthStatus(server.addr)).toBe('SERVING');
  });
});

describe('namespaces', () => {
  it('keeps two tenants with the same lock name apart: both hold it, each under its own keys', async () => {
    const name = uniqueName();
    const a = as(keys.aLock);
    const b = as(keys.bLock);
    const grantA = await a.acquire({ name, owner: 'a', ttlMs: '60000' });
    const grantB = await b.acquire({ name, owner: 'b', ttlMs: '60000', waitTimeoutMs: '5000' });
    expect(grantA.acquired).toBe(true);
    expect(grantB.acquired).toBe(true);
    expect((await a.inspect({ name })).holders).toMatchObject([{ owner: 'a' }]);
    expect((await b.inspect({ name })).holders).toMatchObject([{ owner: 'b' }]);
    expect(await redis.client.exists(lockKeys('hf:ns:tenant-a', name).holders, lockKeys('hf:ns:tenant-b', name).holders)).toBe(2);
    expect(await redis.client.exists(lockKeys('hf', name).holders)).toBe(0);
    await a.release({ name, token: grantA.token });
    await b.release({ name, token: grantB.token });
  });

  it('keeps the namespace default in the keys of servers without authentication', async () => {
    const name = uniqueName();
    const grant = await as(keys.dflt).acquire({ name, ttlMs: '60000' });
    expect(grant.acquired).toBe(true);
    expect(await redis.client.exists(lockKeys('hf', name).holders)).toBe(1);
    await as(keys.dflt).release({ name, token: grant.token });
  });

  it("releases, renews, checks and inspects nothing of another tenant's lock, even with its stolen token", async () => {
    const name = uniqueName();
    const owner = as(keys.aLock);
    const thief = as(keys.bLock);
    const grant = await owner.acquire({ name, owner: 'victim', ttlMs: '60000' });
    expect(await codeOf(thief.release({ name, token: grant.token }))).toBe(status.NOT_FOUND);
    expect(await codeOf(thief.renew({ name, token: grant.token, ttlMs: '1000' }))).toBe(status.NOT_FOUND);
    expect(await codeOf(thief.release({ name, token: grant.token, holdId: '' }))).toBe(status.NOT_FOUND);
    const seen = await thief.inspect({ name });
    expect(seen.holders).toEqual([]);
    expect(seen.fencingToken).toBe('0');
    expect((await thief.checkFencingToken({ name, fencingToken: grant.fencingToken })).live).toBe(false);
    // The owner's lock is untouched, its lease as long as before.
    const info = await owner.inspect({ name });
    expect(info.holders).toMatchObject([{ owner: 'victim', fencingToken: grant.fencingToken }]);
    expect(Number(info.holders[0].ttlMs)).toBeGreaterThan(50_000);
    expect((await owner.release({ name, token: grant.token })).released).toBe(true);
  });
});

describe('reloading the keys', () => {
  it('on SIGHUP: a removed key is refused and its Hold ended, a demoted one loses its Hold, an added one is accepted, the Hold of a kept key is untouched', async () => {
    const kept = as(keys.cKeep).hold({ name: uniqueName(), ttlMs: '1500' });
    const doomed = as(keys.cGone).hold({ name: uniqueName(), ttlMs: '1500' });
    const demoted = as(keys.aLock).hold({ name: uniqueName(), ttlMs: '1500' });
    await kept.next((e) => !!e.acquired);
    await doomed.next((e) => !!e.acquired);
    await demoted.next((e) => !!e.acquired);
    expect(await codeOf(as(keys.cAdds).inspect({ name: 'x' }))).toBe(status.UNAUTHENTICATED);

    // Same size, same modification time: only the signal can tell the server to look.
    const before = statSync(file);
    // c-gone is replaced by c-adds; a-lock becomes a reader.
    writeFileSync(file, configText(firstKeys.map((k) => (k === keys.cGone ? keys.cAdds : k === keys.aLock ? { ...k, role: 'read' } : k))));
    utimesSync(file, before.atime, before.mtime);
    expect(statSync(file).size).toBe(before.size);
    server.process.kill('SIGHUP');
    await waitFor('the reload', () => server.logs.some((l) => l.includes('credentials reloaded') && l.includes('SIGHUP')));

    expect(await doomed.ended).toMatchObject({ code: status.UNAUTHENTICATED, details: expect.stringContaining('revoked') });
    expect(await demoted.ended).toMatchObject({ code: status.PERMISSION_DENIED, details: expect.stringContaining('may no longer call Hold') });
    expect(await codeOf(as(keys.aLock).acquire({ name: uniqueName() }))).toBe(status.PERMISSION_DENIED);
    expect(await codeOf(as(keys.cGone).inspect({ name: 'x' }))).toBe(status.UNAUTHENTICATED);
    expect((await as(keys.cAdds).inspect({ name: 'x' })).holders).toEqual([]);
    // The kept key's Hold goes on renewing after the reload.
    const renewalsAtReload = kept.events.filter((e) => e.renewed).length;
    await kept.next((e) => !!e.renewed && kept.events.filter((x) => x.renewed).length > renewalsAtReload + 1);
    expect(kept.events.some((e) => e.lost)).toBe(false);
    kept.call.cancel();
  });

  it('when the file changes, without a signal', async () => {
    expect(await codeOf(as(keys.dFile).inspect({ name: 'x' }))).toBe(status.UNAUTHENTICATED);
    writeFileSync(file, configText([...firstKeys, keys.dFile]));
    const client = as(keys.dFile);
    await waitFor(
      'the new key to be accepted',
      () =>
        client.inspect({ name: 'x' }).then(
          () => true,
          () => false,
        ),
      10_000,
      100,
    );
    expect(server.logs.some((l) => l.includes('credentials reloaded') && l.includes('file change'))).toBe(true);
  });

  it('keeps the keys in force when the changed file is not valid', async () => {
    writeFileSync(file, configText([...firstKeys, keys.dFile]).replace(hashApiKey(keys.dFile.key), 'not-a-hash'));
    await waitFor('the refusal to be logged', () => server.logs.some((l) => l.includes('config not reloaded')));
    expect(server.logs.find((l) => l.includes('config not reloaded'))).toContain('api-keys[7].sha256');
    expect((await as(keys.aLock).inspect({ name: 'x' })).holders).toEqual([]);
  });

  it('never logs a key or its hash', () => {
    const logs = server.logs.join('\n');
    for (const k of Object.values(keys)) {
      expect(logs).not.toContain(k.key);
      expect(logs).not.toContain(hashApiKey(k.key));
    }
  });
});

describe('client certificates (mutual TLS)', () => {
  let certs: TestCerts;
  let mtls: ServerProcess;
  beforeAll(async () => {
    certs = makeTestCerts();
    certs.issue('mapped', 'batch-reader');
    const mtlsFile = join(dir, 'mtls.yaml');
    writeFileSync(
      mtlsFile,
      `${configText([keys.aLock])}client-certificates:\n  - { name: batch, subject: { O: holdfast-test, CN: batch-reader }, namespace: tenant-a, role: read }\n`,
    );
    mtls = await startServerProcess(redis.url, [
      '--config',
      mtlsFile,
      '--tls-cert',
      certs.file('server.crt'),
      '--tls-key',
      certs.file('server.key'),
      '--tls-client-ca',
      certs.file('ca.crt'),
    ]);
  });
  afterAll(async () => {
    await mtls?.stop();
    certs?.cleanup();
  });

  const tls = (name: string): ClientTls => ({ ca: certs.pem('ca.crt'), cert: certs.pem(`${name}.crt`), key: certs.pem(`${name}.key`) });
  function sdk(cert: string, apiKey?: string): HoldfastClient {
    const client = new HoldfastClient(mtls.addr, { tls: tls(cert), apiKey, callTimeoutMs: 5_000 });
    clients.push(client);
    return client;
  }

  it("maps a certificate's subject to its namespace and role; an unmapped one needs a key", async () => {
    const name = uniqueName();
    const lock = await sdk('client', keys.aLock.key).acquire(name, { owner: 'keyed', ttlMs: 60_000 });
    // CN=batch-reader reads tenant-a's locks, and may do no more.
    expect((await sdk('mapped').inspect(name)).holders).toMatchObject([{ owner: 'keyed' }]);
    expect(await codeOf(sdk('mapped').acquire(name))).toBe(status.PERMISSION_DENIED);
    // CN=test-client is not in the file: without a key it is nobody.
    expect(await codeOf(sdk('client').inspect(name))).toBe(status.UNAUTHENTICATED);
    await lock.release();
  });
});
