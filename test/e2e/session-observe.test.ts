// A Session's operations under API keys, roles and namespaces, in the metrics, and in Watch
// events, as their unary twins are: a real server with a config file of keys and a metrics port.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secureChannel } from '../../clients/ts/credentials';
import { WatchEvent, WatchRequest, type WatchResponse } from '../../gen/holdfast/v1/lock';
import { hashApiKey, newApiKey } from '../../src/auth/api-keys';
import { freePort } from '../../src/redis/embedded';
import { connect, type TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { openSession } from '../support/session';
import { waitFor } from '../support/wait';

const keys = {
  aLock: { name: 'a-lock', namespace: 'tenant-a', role: 'lock', key: newApiKey() },
  aRead: { name: 'a-read', namespace: 'tenant-a', role: 'read', key: newApiKey() },
  bLock: { name: 'b-lock', namespace: 'tenant-b', role: 'lock', key: newApiKey() },
};
let dir: string;
let metricsBase: string;
const env = useServers(1, async () => {
  dir = mkdtempSync(join(tmpdir(), 'holdfast-session-'));
  const file = join(dir, 'holdfast.yaml');
  const lines = Object.values(keys).map((k) => `  - { name: ${k.name}, sha256: ${hashApiKey(k.key)}, namespace: ${k.namespace}, role: ${k.role} }\n`);
  writeFileSync(file, `api-keys:\n${lines.join('')}`);
  const port = await freePort();
  metricsBase = `http://127.0.0.1:${port}`;
  return ['--config', file, '--metrics-listen', `127.0.0.1:${port}`];
});
const clients: TestClient[] = [];
afterAll(() => {
  clients.forEach((c) => c.close());
  rmSync(dir, { recursive: true, force: true });
});

function as(k?: (typeof keys)[keyof typeof keys]): TestClient {
  const client = connect(env.servers[0].addr, k ? (secureChannel({ apiKey: k.key }).options as object) : {});
  clients.push(client);
  return client;
}

async function metric(series: string): Promise<number> {
  const body = await (await fetch(`${metricsBase}/metrics`)).text();
  const line = body.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe('auth and namespaces', () => {
  let locker: TestClient;
  let reader: TestClient;
  beforeAll(() => void ([locker, reader] = [as(keys.aLock), as(keys.aRead)]));

  it('a session without a key ends UNAUTHENTICATED', async () => {
    const s = openSession(as().client);
    s.send({ opId: '1', inspect: { name: uniqueName() } });
    expect((await s.ended).code).toBe(status.UNAUTHENTICATED);
    expect(s.received).toEqual([]);
  });

  it("each operation is allowed or refused as its unary RPC is, for the caller's role", async () => {
    const name = uniqueName();
    const unary = (await reader.acquire({ name }).catch((err: ServiceError) => err)) as ServiceError;
    expect(unary.code).toBe(status.PERMISSION_DENIED);
    const s = openSession(reader.client);
    expect((await s.op({ acquire: { name } })).error).toEqual({ code: status.PERMISSION_DENIED, message: unary.details });
    expect((await s.op({ hold: { name } })).error).toEqual({ code: status.PERMISSION_DENIED, message: unary.details.replace('Acquire', 'Hold') });
    expect((await s.op({ inspect: { name } })).inspect?.holders).toEqual([]);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  it("a session works in its caller's namespace only", async () => {
    const name = uniqueName();
    const a = openSession(locker.client);
    const b = openSession(as(keys.bLock).client);
    expect((await a.op({ hold: { name, owner: 'a' } })).hold).toBeDefined();
    expect((await b.op({ hold: { name, owner: 'b' } })).hold).toBeDefined();
    expect((await a.op({ inspect: { name } })).inspect?.holders).toMatchObject([{ owner: 'a' }]);
    expect((await locker.inspect({ name })).holders).toMatchObject([{ owner: 'a' }]);
    for (const s of [a, b]) {
      s.call.end();
      expect((await s.ended).code).toBe(status.OK);
    }
  });
});

describe('metrics and Watch events', () => {
  it('counts each operation as its unary twin under Session/<Method>, and the grants as grants', async () => {
    const series = (method: string, code: string) => `holdfast_rpcs_total{method="holdfast.v1.LockService/Session/${method}",code="${code}"}`;
    const before = {
      acquired: await metric(series('Acquire', 'OK')),
      notFound: await metric(series('Release', 'NOT_FOUND')),
      grants: await metric('holdfast_grants_total'),
    };
    const s = openSession(as(keys.aLock).client);
    for (let i = 0; i < 3; i++) expect((await s.op({ acquire: { name: uniqueName() } })).acquire?.acquired).toBe(true);
    expect((await s.op({ release: { name: uniqueName(), token: 'gone' } })).error?.code).toBe(status.NOT_FOUND);
    s.call.end();
    await s.ended;
    expect(await metric(series('Acquire', 'OK'))).toBe(before.acquired + 3);
    expect(await metric(series('Release', 'NOT_FOUND'))).toBe(before.notFound + 1);
    expect(await metric('holdfast_grants_total')).toBe(before.grants + 3);
  });

  it('a watcher sees a session hold granted, and released when the session closes', async () => {
    const client = as(keys.aLock);
    const name = uniqueName();
    const events: WatchResponse[] = [];
    const watch = client.client.watch(WatchRequest.fromPartial({ name }), new Metadata());
    watch.on('data', (e: WatchResponse) => events.push(e));
    watch.on('error', () => {});
    await waitFor('the first state', () => events.length > 0);
    const s = openSession(client.client);
    expect((await s.op({ hold: { name, owner: 'watched', ttlMs: '30000' } })).hold).toBeDefined();
    await waitFor('granted', () => events.some((e) => e.event === WatchEvent.WATCH_EVENT_GRANTED));
    s.send({ opId: '9', close: {} });
    await s.ended;
    await waitFor('released', () => events.some((e) => e.event === WatchEvent.WATCH_EVENT_RELEASED));
    watch.cancel();
  });
});
