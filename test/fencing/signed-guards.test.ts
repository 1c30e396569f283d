// The guards with signed fences, through real HTTP requests and a real grpc-js channel: every
// refusal of clients/conformance/signed-fence.md, in its order, with its status and body, and
// before the store is asked (a counter around the real store, and the backend itself: Redis's own
// count of scripts run, the fence rows in PostgreSQL), for each store on its real backend.
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type FenceNames,
  FENCE_HEADERS,
  FENCE_METADATA,
  type FenceValues,
  grpcFenceGuard,
  httpFenceGuard,
  LOCK_RULE_FAILED,
  MemoryFenceStore,
  parseFenceKeys,
} from '../../clients/ts/fencing';
import { uniqueName } from '../support/redis';
import { startHttpApp, type HttpApp } from './http-app';
import { startRawGrpc, type RawGrpc } from './raw-grpc';
import { jwks, KEYS, signed, vectorRing, vectors } from './signing';
import { counted, openStore, STORE_KINDS, type OpenStore } from './stores';
import { asHeaders, asMetadata } from './wire-send';

const ring = vectorRing();
const SENT_TWICE = 'must be sent once (a comma in a value counts as two: none of the three holds one)';
const GRPC: Record<number, number> = { 400: status.INVALID_ARGUMENT, 403: status.PERMISSION_DENIED, 409: status.FAILED_PRECONDITION, 503: status.UNAVAILABLE };

/** A refusal case: the values sent and the answer, its message worded with the transport's names. */
interface Refused {
  name: string;
  values: Partial<FenceValues>;
  status: number;
  error: string;
  fields: (n: FenceNames) => Record<string, string>;
  message: (n: FenceNames) => string;
}

function refusals(lock: string): Refused[] {
  const good = signed({ lock, token: 5n });
  const [v, kid, ns, l, token, end, sig] = good.split(':');
  const other = uniqueName('payments');
  const malformed = (field: 'fence' | 'lock' | 'token', why: string) => ({
    status: 400,
    error: 'malformed_fence',
    fields: (n: FenceNames) => ({ field, header: n[field] }),
    message: (n: FenceNames) => `malformed fence: ${n[field]} ${why}`,
  });
  return [
    {
      name: 'nothing at all',
      values: {},
      status: 400,
      error: 'missing_fence',
      fields: (n) => ({ field: 'fence', header: n.fence }),
      message: (n) => `missing fence: header ${n.fence} is required`,
    },
    {
      name: 'truncated',
      values: { fence: [good.slice(0, -1)] },
      ...malformed('fence', '(its signature field) must be 64 bytes in canonical base64url without padding (86 characters)'),
    },
    { name: 'the signed fence twice', values: { fence: [good, good] }, ...malformed('fence', SENT_TWICE) },
    { name: 'the unsigned token twice beside it', values: { fence: [good], lock: [lock], token: ['5', '5'] }, ...malformed('token', SENT_TWICE) },
    {
      name: 'the unsigned token disagrees',
      values: { fence: [good], lock: [lock], token: ['6'] },
      ...malformed('token', `carries another token than ${'%F'}`),
    },
    {
      name: 'a forged token, unsigned',
      values: { lock: [lock], token: ['18446744073709551615'] },
      status: 403,
      error: 'signed_fence_required',
      fields: (n) => ({ header: n.fence }),
      message: (n) => `this resource requires a signed fence (header ${n.fence})`,
    },
    {
      name: 'signed by an unknown key',
      values: { fence: [signed({ lock, token: 5n }, KEYS.outsider)] },
      status: 403,
      error: 'unknown_fence_key',
      fields: () => ({ key_id: KEYS.outsider.jwk.kid }),
      message: () => `fence signed by unknown key "${KEYS.outsider.jwk.kid}"`,
    },
    ...[
      ['a forged token in a signed fence', [v, kid, ns, l, '18446744073709551615', end, sig]],
      ['an altered lock', [v, kid, ns, encodeURIComponent(other), token, end, sig]],
      ['an altered signature', [v, kid, ns, l, token, end, sig.slice(0, 10) + (sig[10] === 'A' ? 'B' : 'A') + sig.slice(11)]],
    ].map(
      ([name, fields]): Refused => ({
        name: name as string,
        values: { fence: [(fields as string[]).join(':')] },
        status: 403,
        error: 'bad_fence_signature',
        fields: () => ({ key_id: kid }),
        message: () => `fence signature does not verify with key "${kid}"`,
      }),
    ),
    {
      name: 'another namespace',
      values: { fence: [signed({ namespace: 'team-a', lock, token: 5n })] },
      status: 403,
      error: 'fence_for_another_namespace',
      fields: () => ({ namespace: 'team-a', expected: 'default' }),
      message: () => 'fence for namespace "team-a" refused: this resource is protected in namespace "default"',
    },
    {
      name: 'another lock',
      values: { fence: [signed({ lock: other, token: 5n })] },
      status: 403,
      error: 'fence_for_another_lock',
      fields: () => ({ lock: other, expected: lock }),
      message: () => `fence for lock "${other}" refused: this resource is protected by lock "${lock}"`,
    },
  ];
}

/** `message` of a case with the signed fence's header name where the case wrote %F. */
const worded = (c: Refused, n: FenceNames) => c.message(n).replace('%F', n.fence);

describe.each(STORE_KINDS)('%s store: every refusal comes before the store', (kind) => {
  let open: OpenStore;
  let count: ReturnType<typeof counted>;
  let http: HttpApp;
  let grpc: RawGrpc;
  const lock = uniqueName('signed-resource');

  beforeAll(async () => {
    open = await openStore(kind);
    count = counted(open.store);
    http = await startHttpApp(httpFenceGuard(count.store, { keys: ring, lock: (req) => decodeURIComponent(req.url!.split('/').pop()!) }));
    grpc = await startRawGrpc([grpcFenceGuard(count.store, { keys: ring, lock })]);
  }, 60_000);
  afterAll(async () => {
    await http?.close();
    await grpc?.stop();
    await open?.stop();
  });

  it('refuses each case with its status, body and message, over HTTP and gRPC, and the store is never asked', async () => {
    const runsBefore = await open.scriptRuns();
    for (const c of refusals(lock)) {
      const res = await http.send(`/docs/${encodeURIComponent(lock)}`, asHeaders(c.values));
      expect({ case: c.name, status: res.status, body: res.body }).toEqual({
        case: c.name,
        status: c.status,
        body: { error: c.error, message: worded(c, FENCE_HEADERS), ...c.fields(FENCE_HEADERS) },
      });
      const call = await grpc.put(c.name, asMetadata(c.values));
      expect({ case: c.name, call }).toEqual({ case: c.name, call: { ok: false, code: GRPC[c.status], details: worded(c, FENCE_METADATA) } });
    }
    expect(count.calls()).toBe(0);
    expect(http.stored).toEqual([]);
    expect(grpc.stored).toEqual([]);
    // The backend itself saw nothing: no record for either lock, no fence script run.
    expect(await open.recorded(lock)).toBeUndefined();
    expect(await open.scriptRuns()).toBe(runsBefore);

    // Control: the genuine fence passes, and then the counter and the backend both see it.
    const good = { fence: [signed({ lock, token: 5n })], lock: [encodeURIComponent(lock)], token: ['5'] };
    expect((await http.send(`/docs/${encodeURIComponent(lock)}`, asHeaders(good), 'PUT', 'genuine')).status).toBe(200);
    expect(await grpc.put('genuine', asMetadata(good))).toEqual({ ok: true });
    expect(count.calls()).toBe(2);
    expect(await open.recorded(lock)).toBe(5n);
    if (runsBefore !== undefined) expect(await open.scriptRuns()).toBeGreaterThanOrEqual(runsBefore + 2); // + a NOSCRIPT EVALSHA the first time
  });

  it('then orders admitted fences by token: an older signed fence is refused 409 by the store', async () => {
    const older = { fence: [signed({ lock, token: 4n })] };
    const res = await http.send(`/docs/${encodeURIComponent(lock)}`, asHeaders(older), 'PUT', 'older');
    expect(res).toEqual({
      status: 409,
      body: {
        error: 'stale_fencing_token',
        message: `stale fencing token for lock "${lock}": 4 is older than 5, the newest seen`,
        lock,
        token: '4',
        newest: '5',
      },
    });
    expect(await grpc.put('older', asMetadata(older))).toEqual({
      ok: false,
      code: status.FAILED_PRECONDITION,
      details: `stale fencing token for lock "${lock}": 4 is older than 5, the newest seen`,
    });
    expect(http.stored).not.toContain('older');
  });
});

describe('the vectors through the real guards', () => {
  it('each bad fence of signed-fence.json is refused with its status before the store, over HTTP and gRPC', async () => {
    const count = counted(new MemoryFenceStore());
    const http = await startHttpApp(httpFenceGuard(count.store, { keys: ring, lock: 'orders' }));
    const grpc = await startRawGrpc([grpcFenceGuard(count.store, { keys: ring, lock: 'orders' })]);
    const statusOf: Record<string, number> = { malformed: 400, unknown_key: 403, bad_signature: 403 };
    try {
      for (const v of vectors.verify.filter((x: { error?: string }) => x.error)) {
        const res = await http.send('/orders', asHeaders({ fence: [v.fence] }));
        expect({ vector: v.name, status: res.status }).toEqual({ vector: v.name, status: statusOf[v.error] });
        const call = await grpc.put(v.name, asMetadata({ fence: [v.fence] }));
        expect({ vector: v.name, code: call.ok ? 0 : call.code }).toEqual({ vector: v.name, code: GRPC[statusOf[v.error]] });
      }
      expect(count.calls()).toBe(0);
    } finally {
      await http.close();
      await grpc.stop();
    }
  });
});

describe('what a handler reads', () => {
  let http: HttpApp;
  let grpc: RawGrpc;
  beforeAll(async () => {
    const store = new MemoryFenceStore();
    http = await startHttpApp(httpFenceGuard(store, { keys: ring, lock: 'doc' }));
    grpc = await startRawGrpc([grpcFenceGuard(store, { keys: ring, lock: 'doc' })]);
  });
  afterAll(async () => {
    await http?.close();
    await grpc?.stop();
  });

  it('the same fence over HTTP (currentFence() and fenceOf(req), wrapped and as middleware) and gRPC (unary, server and client streaming)', async () => {
    const leaseEndMs = BigInt(Date.now() + 60_000);
    const fence = signed({ lock: 'doc', token: 9n, leaseEndMs });
    const want = { namespace: 'default', lock: 'doc', token: 9n, leaseEndMs, keyId: KEYS.current.jwk.kid, signed: true };
    for (const path of ['/doc', '/mw/doc']) expect((await http.send(path, asHeaders({ fence: [fence] }))).status).toBe(200);
    expect(http.seen).toEqual([
      { current: want, ofReq: want },
      { current: want, ofReq: want },
    ]);
    expect(await grpc.put('a', asMetadata({ fence: [fence] }))).toEqual({ ok: true });
    expect(await grpc.watch('b', asMetadata({ fence: [fence] }))).toEqual({ ok: true });
    expect(await grpc.upload(['c', 'd'], asMetadata({ fence: [fence] }))).toEqual({ ok: true });
    expect(grpc.seen).toEqual([
      ['Put', want],
      ['Watch', want],
      ['Upload', want],
      ['Upload', want],
    ]);
  });

  it('a refused streaming call never reaches its handler', async () => {
    const before = grpc.stored.length;
    const forged = asMetadata({ lock: ['doc'], token: ['99'] });
    expect(await grpc.watch('x', forged)).toMatchObject({ ok: false, code: status.PERMISSION_DENIED });
    expect(await grpc.upload(['y'], forged)).toMatchObject({ ok: false, code: status.PERMISSION_DENIED });
    expect(grpc.stored.length).toBe(before);
  });
});

describe('guarded by default', () => {
  it('every HTTP method and every gRPC method is refused without a fence; a rule narrows it', async () => {
    const all = await startHttpApp(httpFenceGuard(new MemoryFenceStore(), { keys: ring, lock: 'doc' }));
    const narrowed = await startHttpApp(httpFenceGuard(new MemoryFenceStore(), { keys: ring, lock: 'doc', guards: (req) => req.method !== 'GET' }));
    const grpc = await startRawGrpc([grpcFenceGuard(new MemoryFenceStore(), { keys: ring, lock: 'doc' })]);
    try {
      for (const method of ['GET', 'HEAD', 'OPTIONS', 'PUT', 'POST', 'DELETE', 'PATCH']) {
        expect({ method, status: (await all.send('/doc', {}, method)).status }).toEqual({ method, status: 400 });
      }
      expect(await grpc.put('x', asMetadata({}))).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
      expect(await grpc.watch('x', asMetadata({}))).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
      expect(await grpc.upload(['x'], asMetadata({}))).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
      expect(all.stored).toEqual([]);
      expect(grpc.stored).toEqual([]);
      expect((await narrowed.send('/doc', {}, 'GET')).status).toBe(200);
      expect((await narrowed.send('/doc', {}, 'PUT')).status).toBe(400);
    } finally {
      await all.close();
      await narrowed.close();
      await grpc.stop();
    }
  });
});

describe('the options', () => {
  it('are checked when the guard is built, naming the one at fault', () => {
    const store = new MemoryFenceStore();
    expect(() => httpFenceGuard(store, { keys: ring })).toThrow("httpFenceGuard: with keys, give the resource's lock");
    expect(() => grpcFenceGuard(store, { keys: ring })).toThrow("grpcFenceGuard: with keys, give the resource's lock");
    expect(() => httpFenceGuard(store, { leaseEndSkewMs: 1000 })).toThrow('leaseEndSkewMs needs keys');
    expect(() => httpFenceGuard(store, { keys: ring, lock: 'doc', leaseEndSkewMs: -1 })).toThrow('leaseEndSkewMs must be a whole number');
    expect(() => httpFenceGuard(store, { keys: ring, lock: 'doc', namespace: '' })).toThrow('namespace must not be empty');
  });

  it('a lock rule reads the request; one that throws or gives no name answers 500 / INTERNAL without asking the store', async () => {
    const count = counted(new MemoryFenceStore());
    const byPath = await startHttpApp(httpFenceGuard(count.store, { keys: ring, lock: (req) => (req.url === '/docs/a' ? 'a' : '') }));
    const grpc = await startRawGrpc([
      grpcFenceGuard(count.store, {
        keys: ring,
        lock: (path, md) => {
          if (path !== '/fencetest.Storage/Put') throw new Error('no lock for this method');
          return String(md.get('x-doc')[0] ?? '');
        },
      }),
    ]);
    try {
      const fenceA = signed({ lock: 'a', token: 1n });
      expect((await byPath.send('/docs/a', asHeaders({ fence: [fenceA] }))).status).toBe(200);
      expect(await byPath.send('/docs/b', asHeaders({ fence: [fenceA] }))).toEqual({
        status: 500,
        body: { error: 'fence_guard_misconfigured', message: LOCK_RULE_FAILED },
      });
      const md = asMetadata({ fence: [fenceA] });
      md.set('x-doc', 'a');
      expect(await grpc.put('x', md)).toEqual({ ok: true });
      expect(await grpc.watch('x', md)).toEqual({ ok: false, code: status.INTERNAL, details: LOCK_RULE_FAILED });
      expect(await grpc.put('x', asMetadata({ fence: [fenceA] }))).toEqual({ ok: false, code: status.INTERNAL, details: LOCK_RULE_FAILED });
      expect(count.calls()).toBe(2);
    } finally {
      await byPath.close();
      await grpc.stop();
    }
  });

  it('acceptUnsigned admits the unsigned pair too (still bound to the lock); without keys the guard reads the unsigned pair as before', async () => {
    const mixed = await startHttpApp(httpFenceGuard(new MemoryFenceStore(), { keys: ring, lock: 'doc', acceptUnsigned: true }));
    const plain = await startHttpApp(httpFenceGuard(new MemoryFenceStore(), { lock: 'doc' }));
    const open = await startHttpApp(httpFenceGuard(new MemoryFenceStore()));
    try {
      expect((await mixed.send('/doc', asHeaders({ lock: ['doc'], token: ['3'] }))).status).toBe(200);
      expect(mixed.seen[0].current).toEqual({ namespace: '', lock: 'doc', token: 3n, leaseEndMs: null, keyId: '', signed: false });
      expect((await mixed.send('/doc', asHeaders({ fence: [signed({ lock: 'doc', token: 4n })] }))).status).toBe(200);
      expect((await mixed.send('/doc', asHeaders({ fence: [signed({ lock: 'doc', token: 5n }, KEYS.outsider)] }))).body.error).toBe('unknown_fence_key');
      expect((await mixed.send('/doc', asHeaders({ lock: ['other'], token: ['9'] }))).body.error).toBe('fence_for_another_lock');
      // No keys: the unsigned pair, bound to the lock when the guard knows it; a signed fence alone is not read.
      expect((await plain.send('/doc', asHeaders({ lock: ['doc'], token: ['3'] }))).status).toBe(200);
      expect((await plain.send('/doc', asHeaders({ lock: ['other'], token: ['9'] }))).body).toMatchObject({
        error: 'fence_for_another_lock',
        lock: 'other',
        expected: 'doc',
      });
      expect((await plain.send('/doc', asHeaders({ fence: [signed({ lock: 'doc', token: 4n })] }))).body).toMatchObject({
        error: 'missing_fence',
        header: 'Holdfast-Fence-Token',
      });
      expect((await open.send('/x', asHeaders({ lock: ['anything'], token: ['3'] }))).status).toBe(200);
    } finally {
      await mixed.close();
      await plain.close();
      await open.close();
    }
  });
});

describe('rotation at the guard', () => {
  it('a fence of the old key passes while the old key is in the ring, and is refused (unknown key) by a guard built on a ring without it', async () => {
    const count = counted(new MemoryFenceStore());
    const both = await startHttpApp(httpFenceGuard(count.store, { keys: parseFenceKeys(jwks(KEYS.current, KEYS.next)), lock: 'doc' }));
    const newOnly = await startHttpApp(httpFenceGuard(count.store, { keys: parseFenceKeys(jwks(KEYS.next)), lock: 'doc' }));
    try {
      const old = asHeaders({ fence: [signed({ lock: 'doc', token: 1n }, KEYS.current)] });
      const fresh = asHeaders({ fence: [signed({ lock: 'doc', token: 2n }, KEYS.next)] });
      expect((await both.send('/doc', old)).status).toBe(200);
      expect((await both.send('/doc', fresh)).status).toBe(200);
      expect(count.calls()).toBe(2);
      expect((await newOnly.send('/doc', old)).body).toEqual({
        error: 'unknown_fence_key',
        message: `fence signed by unknown key "${KEYS.current.jwk.kid}"`,
        key_id: KEYS.current.jwk.kid,
      });
      expect(count.calls()).toBe(2);
      expect((await newOnly.send('/doc', fresh)).status).toBe(200);
    } finally {
      await both.close();
      await newOnly.close();
    }
  });
});

describe('the lease-end check', () => {
  it('on (a skew allowance given): a fence whose lease certainly ended is refused 409 before the store though no newer holder wrote', async () => {
    const count = counted(new MemoryFenceStore());
    const on = await startHttpApp(httpFenceGuard(count.store, { keys: ring, lock: 'doc', leaseEndSkewMs: 1000 }));
    const grpc = await startRawGrpc([grpcFenceGuard(count.store, { keys: ring, lock: 'doc', leaseEndSkewMs: 1000 })]);
    try {
      const endedAt = BigInt(Date.now() - 60_000);
      const ended = { fence: [signed({ lock: 'doc', token: 7n, leaseEndMs: endedAt })] };
      const res = await on.send('/doc', asHeaders(ended));
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ error: 'fence_lease_ended', lock: 'doc', token: '7', lease_end_ms: `${endedAt}`, skew_ms: '1000' });
      expect(BigInt(res.body.now_ms)).toBeGreaterThan(endedAt + 1000n);
      expect(res.body.message).toBe(
        `fence for lock "doc" (token 7) refused: its lease ended at ${endedAt}, now is ${res.body.now_ms} (skew allowance 1000 ms)`,
      );
      expect(await grpc.put('x', asMetadata(ended))).toMatchObject({ ok: false, code: status.FAILED_PRECONDITION });
      expect(count.calls()).toBe(0);
      // Still running, or stating no end (a session's lock): admitted with the check on.
      expect((await on.send('/doc', asHeaders({ fence: [signed({ lock: 'doc', token: 7n })] }))).status).toBe(200);
      expect((await on.send('/doc', asHeaders({ fence: [signed({ lock: 'doc', token: 8n, leaseEndMs: null })] }))).status).toBe(200);
    } finally {
      await on.close();
      await grpc.stop();
    }
  });

  it('negative control, off (the default): the same ended fence is admitted, only token order protects', async () => {
    const off = await startHttpApp(httpFenceGuard(new MemoryFenceStore(), { keys: ring, lock: 'doc' }));
    try {
      const ended = { fence: [signed({ lock: 'doc', token: 7n, leaseEndMs: Date.now() - 60_000 })] };
      expect((await off.send('/doc', asHeaders(ended))).status).toBe(200);
    } finally {
      await off.close();
    }
  });
});
