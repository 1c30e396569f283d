// The guards through real calls: fences attached by real grants of a real holdfast server
// (Lock.fence / fenceMetadata), sent through a real grpc-js channel and real HTTP requests.
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Metadata, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient, type Lock } from '../../clients/ts/index';
import { Redis } from 'ioredis';
import { fenceOf, grpcFenceGuard, httpFenceGuard, MemoryFenceStore, RedisFenceStore, staleMessage, type Refusal } from '../../clients/ts/fencing';
import { uniqueName } from '../support/redis';
import { startFenceHoldfast, startFenceRedis } from './backends';
import { startRawGrpc, type RawGrpc } from './raw-grpc';

let holdfast: Awaited<ReturnType<typeof startFenceHoldfast>>;
let client: HoldfastClient;

/** Two grants of one lock, one after the other: the older's token is stale once the newer wrote. */
async function twoGrants(): Promise<[Lock, Lock]> {
  const name = uniqueName('guarded');
  const older = await client.acquire(name, { ttlMs: 10_000 });
  await older.release();
  const newer = await client.acquire(name, { ttlMs: 10_000 });
  expect(newer.fencingToken).toBeGreaterThan(older.fencingToken);
  return [older, newer];
}

beforeAll(async () => {
  holdfast = await startFenceHoldfast();
  client = new HoldfastClient(holdfast.server.addr);
});
afterAll(async () => {
  client?.close();
  await holdfast?.stop();
});

describe('gRPC server interceptor', () => {
  let grpc: RawGrpc;
  const refused: Refusal[] = [];
  beforeAll(async () => {
    grpc = await startRawGrpc([grpcFenceGuard(new MemoryFenceStore(), { onRefused: (r) => refused.push(r) })]);
  });
  afterAll(() => grpc?.stop());

  it('lets the newest grant through, again and again, and refuses the older one FAILED_PRECONDITION', async () => {
    const [older, newer] = await twoGrants();
    expect(await grpc.put('new-1', newer.fenceMetadata())).toEqual({ ok: true });
    expect(await grpc.put('new-2', newer.fenceMetadata())).toEqual({ ok: true });
    const stale = await grpc.put('old', older.fenceMetadata());
    expect(stale).toEqual({ ok: false, code: status.FAILED_PRECONDITION, details: staleMessage(older.name, older.fencingToken, newer.fencingToken) });
    expect(grpc.stored).toEqual(expect.arrayContaining(['new-1', 'new-2']));
    expect(grpc.stored).not.toContain('old');
    expect(refused).toContainEqual({ lock: older.name, token: older.fencingToken, newest: newer.fencingToken });
  });

  it('refuses a call without a fence or with a malformed one INVALID_ARGUMENT, naming the key', async () => {
    const before = grpc.stored.length;
    const none = await grpc.put('none', new Metadata());
    expect(none).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
    expect((none as { details: string }).details).toContain('holdfast-fence-token');
    const md = new Metadata();
    md.set('holdfast-fence-lock', 'a');
    md.set('holdfast-fence-token', '01');
    const bad = await grpc.put('bad', md);
    expect(bad).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
    expect((bad as { details: string }).details).toContain('malformed fence: holdfast-fence-token');
    expect(grpc.stored.length).toBe(before);
  });

  it('negative control: without the interceptor the stale call is stored', async () => {
    const open = await startRawGrpc([]);
    try {
      const [older] = await twoGrants();
      expect(await open.put('old', older.fenceMetadata())).toEqual({ ok: true });
      expect(open.stored).toEqual(['old']);
    } finally {
      await open.stop();
    }
  });
});

describe('HTTP guard', () => {
  let server: Server;
  let url: string;
  const stored: string[] = [];
  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    stored.push(body);
    res.end(JSON.stringify({ stored: body, token: fenceOf(req)?.token.toString() }));
  };
  const put = (path: string, body: string, headers: Record<string, string> | Headers) => fetch(`${url}${path}`, { method: 'PUT', body, headers });

  beforeAll(async () => {
    // One guard, used both ways: wrapping a handler (/wrapped) and as (req, res, next) middleware.
    const guard = httpFenceGuard(new MemoryFenceStore());
    const wrapped = guard.wrap(handler);
    server = createServer((req, res) => {
      if (req.url === '/wrapped') return wrapped(req, res);
      guard(req, res, () => void handler(req, res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server?.close(() => resolve())));

  it.each(['/wrapped', '/middleware'])('%s: the newest grant passes (twice), the older gets 409 with the body fencing.json sets', async (path) => {
    const [older, newer] = await twoGrants();
    const first = await put(path, 'new-1', newer.fence(new Headers()));
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ stored: 'new-1', token: newer.fencingToken.toString() });
    expect((await put(path, 'new-2', newer.fence({}))).status).toBe(200);
    const stale = await put(path, 'old', older.fence({}));
    expect(stale.status).toBe(409);
    expect(await stale.json()).toEqual({
      error: 'stale_fencing_token',
      message: staleMessage(older.name, older.fencingToken, newer.fencingToken),
      lock: older.name,
      token: older.fencingToken.toString(),
      newest: newer.fencingToken.toString(),
    });
    expect(stored).not.toContain('old');
  });

  it('answers 400 naming the header for a missing or malformed fence', async () => {
    const missing = await put('/wrapped', 'x', {});
    expect(missing.status).toBe(400);
    expect(await missing.json()).toEqual({
      error: 'missing_fence',
      message: 'missing fence: header Holdfast-Fence-Token is required',
      field: 'token',
      header: 'Holdfast-Fence-Token',
    });
    const malformed = await put('/wrapped', 'x', { 'Holdfast-Fence-Lock': '%zz', 'Holdfast-Fence-Token': '3' });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: 'malformed_fence', field: 'lock', header: 'Holdfast-Fence-Lock' });
    // Two header lines (fetch would join them into one): Node's http client sends an array as such.
    const sentTwice = await new Promise<{ status?: number; body: string }>((resolve, reject) => {
      const req = request(`${url}/wrapped`, { method: 'PUT', headers: { 'Holdfast-Fence-Lock': ['a', 'b'], 'Holdfast-Fence-Token': '3' } }, (res) => {
        let body = '';
        res.on('data', (chunk) => (body += chunk)).on('end', () => resolve({ status: res.statusCode, body }));
      });
      req.on('error', reject);
      req.end('x');
    });
    expect(sentTwice.status).toBe(400);
    expect(JSON.parse(sentTwice.body)).toMatchObject({ error: 'malformed_fence', field: 'lock', header: 'Holdfast-Fence-Lock' });
    expect(stored).not.toContain('x');
  });
});

describe('attach on a lease (Hold) and on a set of locks (HoldSet)', () => {
  it('a Lease attaches its own fence; a LeaseSet refuses to guess and fences per member', async () => {
    const [one, two] = [uniqueName('set'), uniqueName('set')];
    const lease = await client.hold(one, { ttlMs: 10_000 });
    expect(lease.fence({})).toEqual({ 'Holdfast-Fence-Lock': one, 'Holdfast-Fence-Token': lease.fencingToken.toString() });
    expect(lease.fenceMetadata().get('holdfast-fence-token')).toEqual([lease.fencingToken.toString()]);
    await lease.release();
    const set = await client.holdSet([one, two], { ttlMs: 10_000 });
    try {
      expect(() => set.fence({})).toThrow('fenceMember');
      expect(() => set.fenceMetadata()).toThrow('fenceMember');
      expect(set.fenceMember({}, two)).toEqual({ 'Holdfast-Fence-Lock': two, 'Holdfast-Fence-Token': set.memberFencingToken(two).toString() });
      expect(set.fenceMemberMetadata(one).get('holdfast-fence-lock')).toEqual([one]);
      expect(set.memberFencingToken(one)).toBeGreaterThan(lease.fencingToken);
    } finally {
      await set.release();
    }
  });
});

describe('a store that cannot answer (its Redis stopped)', () => {
  it('fails closed: HTTP 503 and gRPC UNAVAILABLE, and the handler never runs', async () => {
    const redis = await startFenceRedis();
    const client = new Redis(redis.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: true }).on('error', () => {});
    await client.connect();
    const store = await RedisFenceStore.open(client);
    const grpc = await startRawGrpc([grpcFenceGuard(store)]);
    let handled = 0;
    const server = createServer(httpFenceGuard(store).wrap((_req, res) => void (handled++, res.end('ok'))));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const [, newer] = await twoGrants();
      await redis.stop();
      const res = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/`, { method: 'PUT', body: 'x', headers: newer.fence({}) });
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ error: 'fence_store_unavailable' });
      expect(await grpc.put('x', newer.fenceMetadata())).toMatchObject({ ok: false, code: status.UNAVAILABLE });
      expect(handled).toBe(0);
      expect(grpc.stored).toEqual([]);
    } finally {
      client.disconnect();
      await redis.stop(); // again, in case the test failed before stopping it: a second stop does nothing
      await grpc.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
