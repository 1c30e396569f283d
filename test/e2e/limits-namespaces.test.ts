// The per-namespace caps with authentication (README "Limits"): each API key's namespace is
// counted on its own, a refused (unauthenticated) call is never counted, and RPC metrics see
// the refusals of every interceptor. A real server process with a config file of two keys.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secureChannel } from '../../clients/ts/credentials';
import { hashApiKey, newApiKey } from '../../src/auth/api-keys';
import { freePort } from '../../src/redis/embedded';
import { connect, type TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import type { ServerProcess } from '../support/server';

const keyA = newApiKey();
const keyB = newApiKey();
let dir: string;
let server: ServerProcess;
let metricsUrl: string;
const clients: TestClient[] = [];

function as(apiKey?: string): TestClient {
  const client = connect(server.addr, { 'grpc.use_local_subchannel_pool': 1, ...(apiKey ? (secureChannel({ apiKey }).options as object) : {}) });
  clients.push(client);
  return client;
}

const env = useServers(1, async () => {
  dir = mkdtempSync(join(tmpdir(), 'holdfast-ns-limits-'));
  const file = join(dir, 'holdfast.yaml');
  writeFileSync(
    file,
    'api-keys:\n' +
      `  - { name: a, sha256: ${hashApiKey(keyA)}, namespace: tenant-a, role: lock }\n` +
      `  - { name: b, sha256: ${hashApiKey(keyB)}, namespace: tenant-b, role: lock }\n`,
  );
  const metricsPort = await freePort();
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  return ['--config', file, '--max-holds-per-namespace', '2', '--metrics-listen', `127.0.0.1:${metricsPort}`];
});
beforeAll(() => void (server = env.servers[0]));
afterAll(() => {
  clients.forEach((c) => c.close());
  rmSync(dir, { recursive: true, force: true });
});

describe('per-namespace limits with API keys', () => {
  it("a namespace at its cap is refused, naming it; another namespace's calls go on", async () => {
    const a = as(keyA);
    const holds = [a.hold({ name: uniqueName() }), as(keyA).hold({ name: uniqueName() })];
    await Promise.all(holds.map((h) => h.next((e) => !!e.acquired)));
    const third = as(keyA).hold({ name: uniqueName() });
    expect(await third.ended).toEqual({
      code: status.RESOURCE_EXHAUSTED,
      details: 'namespace "tenant-a" has 2 Hold streams open on this server, the most max-holds-per-namespace allows',
    });
    const scrape = await (await fetch(metricsUrl)).text();
    expect(scrape).toContain('holdfast_limit_refusals_total{limit="max-holds-per-namespace"} 1\n');
    expect(scrape).not.toContain('tenant-a'); // namespaces are no label either
    const b = [as(keyB).hold({ name: uniqueName() }), as(keyB).hold({ name: uniqueName() })];
    await Promise.all(b.map((h) => h.next((e) => !!e.acquired)));
    [...holds, ...b].forEach((h) => h.call.cancel());
  });

  it('an unauthenticated Hold is refused before it is counted, and the refusal shows in the RPC metrics', async () => {
    const series = 'holdfast_rpcs_total{method="holdfast.v1.LockService/Hold",code="UNAUTHENTICATED"}';
    const count = async () =>
      Number(
        (await (await fetch(metricsUrl)).text())
          .split('\n')
          .find((l) => l.startsWith(series))
          ?.split(' ')[1] ?? 0,
      );
    const before = await count();
    const refused = await Promise.all([1, 2, 3].map(() => as().hold({ name: uniqueName() }).ended));
    expect(refused.map((r) => r.code)).toEqual([status.UNAUTHENTICATED, status.UNAUTHENTICATED, status.UNAUTHENTICATED]);
    expect((await count()) - before).toBe(3);
    // Nothing was counted against the default namespace or anyone else: tenant-a still holds two.
    const holds = [as(keyA).hold({ name: uniqueName() }), as(keyA).hold({ name: uniqueName() })];
    await Promise.all(holds.map((h) => h.next((e) => !!e.acquired)));
    holds.forEach((h) => h.call.cancel());
  });
});
