// clients/conformance/fencing.json, case by case: attach (Lease/Lock helpers' wire form), parse
// (through the HTTP and the gRPC readers) and decide (against each store on its real backend).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Metadata } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attachFenceHeaders,
  attachFenceMetadata,
  fenceFromHeaders,
  fenceFromMetadata,
  FenceError,
  FENCE_HEADERS,
  FENCE_METADATA,
  staleMessage,
} from '../../clients/ts/fencing';
import { FENCE_RECORD_SCRIPT } from '../../clients/ts/fencing/fence-record-1';
import { staleBody } from '../../clients/ts/fencing/refusal';
import { uniqueName } from '../support/redis';
import { openStore, STORE_KINDS, type OpenStore } from './stores';

const CONFORMANCE = join(__dirname, '..', '..', 'clients', 'conformance');
const cases = JSON.parse(readFileSync(join(CONFORMANCE, 'fencing.json'), 'utf8'));

describe('the wire names', () => {
  it('are the ones fencing.json sets (the signed fence adds a third: signed-conformance.test.ts)', () => {
    expect({ lock: FENCE_METADATA.lock, token: FENCE_METADATA.token }).toEqual(cases.wire.grpcMetadata);
    expect({ lock: FENCE_HEADERS.lock, token: FENCE_HEADERS.token }).toEqual(cases.wire.httpHeaders);
  });
});

describe('fence-record-1.lua', () => {
  it('is shipped byte-identical inside the SDK', () => {
    const original = readFileSync(join(CONFORMANCE, 'fence-record-1.lua'));
    expect(Buffer.from(FENCE_RECORD_SCRIPT, 'utf8').equals(original)).toBe(true);
    // Negative control: the comparison sees a one-byte change.
    expect(Buffer.from(FENCE_RECORD_SCRIPT.replace('token < newest', 'token <= newest'), 'utf8').equals(original)).toBe(false);
  });
});

type AttachCase = { name: string; lock: string; token: string; headers: { lock: string; token: string } };

describe.each(cases.attach as AttachCase[])('attach: $name', (c) => {
  const want = { [FENCE_HEADERS.lock]: c.headers.lock, [FENCE_HEADERS.token]: c.headers.token };
  it('writes a plain headers object, a fetch Headers and gRPC metadata', () => {
    expect(attachFenceHeaders({}, c.lock, BigInt(c.token))).toEqual(want);
    const headers = attachFenceHeaders(new Headers(), c.lock, BigInt(c.token));
    expect(Object.fromEntries(headers)).toEqual({ 'holdfast-fence-lock': c.headers.lock, 'holdfast-fence-token': c.headers.token });
    const md = attachFenceMetadata(c.lock, BigInt(c.token));
    expect(md.getMap()).toEqual({ [FENCE_METADATA.lock]: c.headers.lock, [FENCE_METADATA.token]: c.headers.token });
  });
  it('reads back as it was written', () => {
    const read = fenceFromHeaders({ 'holdfast-fence-lock': c.headers.lock, 'holdfast-fence-token': c.headers.token });
    expect(read).toEqual({ lock: c.lock, token: BigInt(c.token) });
  });
});

type ParseCase = {
  name: string;
  headers: { lock?: string; token?: string };
  expect?: { lock: string; token: string };
  error?: string;
  field?: 'lock' | 'token';
};

describe.each(cases.parse as ParseCase[])('parse: $name', (c) => {
  const viaHttp = () => {
    const h: Record<string, string> = {};
    if (c.headers.lock !== undefined) h['holdfast-fence-lock'] = c.headers.lock;
    if (c.headers.token !== undefined) h['holdfast-fence-token'] = c.headers.token;
    return () => fenceFromHeaders(h);
  };
  const viaGrpc = () => {
    const md = new Metadata();
    if (c.headers.lock !== undefined) md.set(FENCE_METADATA.lock, c.headers.lock);
    if (c.headers.token !== undefined) md.set(FENCE_METADATA.token, c.headers.token);
    return () => fenceFromMetadata(md);
  };
  it.each([
    ['HTTP headers', viaHttp, FENCE_HEADERS],
    ['gRPC metadata', viaGrpc, FENCE_METADATA],
  ] as const)('through %s', (_, make, names) => {
    const read = make();
    if (c.expect) {
      expect(read()).toEqual({ lock: c.expect.lock, token: BigInt(c.expect.token) });
      return;
    }
    let caught: unknown;
    try {
      read();
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(FenceError);
    const err = caught as FenceError;
    expect({ kind: err.kind, field: err.field, header: err.header }).toEqual({ kind: c.error, field: c.field, header: names[c.field!] });
    expect(err.message).toContain(names[c.field!]);
  });
});

describe.each(STORE_KINDS)('decide, %s store', (kind) => {
  let open: OpenStore;
  beforeAll(async () => {
    open = await openStore(kind);
  }, 60_000);
  afterAll(() => open?.stop());

  type DecideCase = { name: string; newest: string | null; token: string; accepted: boolean; newestAfter: string };
  it.each(cases.decide as DecideCase[])('$name', async (c) => {
    const lock = uniqueName('decide');
    if (c.newest !== null) expect(await open.store.check(lock, BigInt(c.newest))).toEqual({ accepted: true, newest: BigInt(c.newest) });
    expect(await open.store.check(lock, BigInt(c.token))).toEqual({ accepted: c.accepted, newest: BigInt(c.newestAfter) });
    // What the store now holds: a check with 0 is refused (unless 0 is the newest) and reports it.
    const probe = await open.store.check(lock, 0n);
    expect(probe.newest).toBe(BigInt(c.newestAfter));
  });
});

describe('the refusal message', () => {
  it('is the one fencing.json sets, naming the lock and both tokens', () => {
    const want = cases.refusal.message.replace('{lock}', 'orders').replace('{token}', '5').replace('{newest}', '6');
    expect(staleMessage('orders', 5n, 6n)).toBe(want);
  });
  it('has the HTTP 409 body fencing.json sets, field for field, and the message (signed-fence.md: every refusal body has one)', () => {
    const fill = (v: string) => v.replace('{lock}', 'orders').replace('{token}', '5').replace('{newest}', '6');
    const message = fill(cases.refusal.message);
    const want = Object.fromEntries(
      Object.entries(cases.refusal.httpBody as Record<string, string>).map(([k, v]) => [k, v === '{message}' ? message : fill(v)]),
    );
    expect(want.message).toBe(message);
    expect(staleBody('orders', 5n, 6n)).toEqual(want);
  });
});
