// Standard services and Redis faults: reflection (what grpcurl uses), health, UNAVAILABLE while
// Redis is down and recovery when it is back (scripts reloaded after NOSCRIPT).
import { credentials, makeGenericClientConstructor, status, type Client, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { GrpcReflection } from 'grpc-js-reflection-client';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName, type TestRedis } from '../support/redis';
import type { ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

// A 30 s lease cap: the quarantine after the Redis restart below lasts 31 s, not 61.
const env = useServers(1, ['--max-ttl-ms', '30000']);
let redis: TestRedis;
let server: ServerProcess;
let client: TestClient;
beforeAll(() => void ([redis, server, client] = [env.redis, env.servers[0], env.clients[0]]));

type Callback = (err: ServiceError | null, res: Record<string, unknown>) => void;
const call = (c: Client, method: string, request: object) =>
  new Promise<Record<string, unknown>>((resolve, reject) =>
    (c as unknown as Record<string, (r: object, cb: Callback) => void>)[method](request, (err, res) => (err ? reject(err) : resolve(res))),
  );

function healthStatus(addr: string, serviceName: string): Promise<string> {
  const Health = makeGenericClientConstructor(healthService, 'Health');
  const health = new Health(addr, credentials.createInsecure());
  return call(health, 'check', { service: serviceName })
    .then((r) => String(r.status))
    .finally(() => health.close());
}

describe('server reflection', () => {
  it('lists the services, as `grpcurl -plaintext HOST:PORT list` does', async () => {
    const reflection = new GrpcReflection(server.addr, credentials.createInsecure());
    const services = await reflection.listServices();
    expect(services).toEqual(expect.arrayContaining(['holdfast.v1.LockService', 'grpc.health.v1.Health']));
  });

  it('serves the proto’s own field names (ttl_ms), which grpcurl’s JSON input accepts', async () => {
    const reflection = new GrpcReflection(server.addr, credentials.createInsecure());
    const root = (await reflection.getDescriptorBySymbol('holdfast.v1.LockService')).getProtobufJsRoot();
    const fields = Object.keys(root.lookupType('holdfast.v1.AcquireRequest').fields);
    expect(fields).toEqual(expect.arrayContaining(['ttl_ms', 'wait_timeout_ms', 'request_id']));
    expect(fields).not.toContain('ttlMs');
  });

  it('describes LockService well enough to make the README’s grpcurl calls with no .proto file', async () => {
    const reflection = new GrpcReflection(server.addr, credentials.createInsecure());
    const descriptor = await reflection.getDescriptorBySymbol('holdfast.v1.LockService');
    const pkg = descriptor.getPackageObject({ longs: String, enums: String, defaults: true }) as unknown as {
      holdfast: { v1: { LockService: ServiceClientConstructor } };
    };
    const LockService = pkg.holdfast.v1.LockService;
    const lockService: Client = new LockService(server.addr, credentials.createInsecure());
    try {
      const name = uniqueName('orders');
      // The same requests as the README's grpcurl examples, with the proto's field names.
      const grant = await call(lockService, 'Acquire', { name, owner: 'worker-1', ttl_ms: '30000' });
      expect(grant).toMatchObject({ acquired: true, hold_count: 1, ttl_ms: '30000' });
      const info = await call(lockService, 'Inspect', { name });
      expect(info).toMatchObject({ name, waiters: 0, holders: [{ owner: 'worker-1', mode: 'LOCK_MODE_EXCLUSIVE', hold_count: 1 }] });
      expect(await call(lockService, 'Release', { name, token: grant.token })).toEqual({ released: true, hold_count: 0 });
    } finally {
      lockService.close();
    }
  });
});

describe('Redis faults', () => {
  it('reloads its scripts when Redis has forgotten them (NOSCRIPT)', async () => {
    await redis.client.script('FLUSH');
    expect((await client.acquire({ name: uniqueName() })).acquired).toBe(true);
  });

  it('health says SERVING while Redis is up', async () => {
    expect(await healthStatus(server.addr, '')).toBe('SERVING');
    expect(await healthStatus(server.addr, 'holdfast.v1.LockService')).toBe('SERVING');
  });

  it('answers UNAVAILABLE within about a second while Redis is down, and recovers by itself', async () => {
    const name = uniqueName();
    expect((await client.acquire({ name })).acquired).toBe(true);
    const waiting = client.acquire({ name, waitTimeoutMs: '1500' }).then(
      (response) => ({ response }),
      (error) => ({ error }),
    );
    await waitFor('the waiter to queue', async () => (await client.inspect({ name })).waiters === 1);
    await redis.stop();
    // A wait that Redis dropped out of ends as UNAVAILABLE, not as "not acquired".
    expect(await waiting).toMatchObject({ error: { code: status.UNAVAILABLE } });
    await waitFor('health NOT_SERVING', async () => (await healthStatus(server.addr, '')) === 'NOT_SERVING');
    for (const request of [
      () => client.acquire({ name: uniqueName() }),
      () => client.inspect({ name }),
      () => client.acquire({ name: uniqueName(), waitTimeoutMs: '5000' }),
    ]) {
      const startedAt = performance.now();
      await expect(request()).rejects.toMatchObject({ code: status.UNAVAILABLE, details: expect.stringMatching(/Redis/) });
      expect(performance.now() - startedAt).toBeLessThan(1500);
    }

    await redis.restart(); // a new process: its script cache is empty (NOSCRIPT), its data gone
    // Its data gone, grants wait out the quarantine (31 s here) before health says SERVING.
    await waitFor('health SERVING', async () => (await healthStatus(server.addr, '')) === 'SERVING', 45_000, 200);
    const again = await client.acquire({ name: uniqueName() });
    expect(again.acquired).toBe(true);
    expect(await client.inspect({ name })).toMatchObject({ holders: [] });
  }, 70_000);
});
