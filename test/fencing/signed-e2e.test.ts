// Signed fences end to end: a real holdfast server started with --fence-signing-key (a key made by
// `holdfast fence-key new`), its grants' fences attached by the SDK (Lock, Lease, LeaseSet,
// LockSet, Leadership; over a Hold stream and over a session), a guard whose key ring is fetched
// from the server's /fence-keys. A Hold's renewed fence is admitted after its first fence's lease
// end passed, with the lease-end check on; Kleppmann's scenario with real grants on each store.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  campaign,
  FENCE_HEADERS,
  type FenceKeyRing,
  fetchFenceKeys,
  grpcFenceGuard,
  HoldfastClient,
  httpFenceGuard,
  MemoryFenceStore,
  parseSignedFence,
} from '../../clients/ts/index';
import { freePort } from '../../src/redis/embedded';
import { uniqueName } from '../support/redis';
import { newFenceKey } from '../signing/fences';
import { startFenceHoldfast } from './backends';
import { startHttpApp, type HttpApp } from './http-app';
import { startRawGrpc } from './raw-grpc';
import { openStore, STORE_KINDS } from './stores';

let holdfast: Awaited<ReturnType<typeof startFenceHoldfast>>;
let dir: string;
let keysUrl: string;
let ring: FenceKeyRing;
/** Hold streams and unary calls: a Hold's renewals bring fresh signed fences. */
let unary: HoldfastClient;
/** The default transport: locks kept by a session, whose fences state no lease end. */
let session: HoldfastClient;
const apps: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'holdfast-fence-e2e-'));
  const key = join(dir, 'fence.pem');
  newFenceKey(key);
  const httpPort = await freePort();
  holdfast = await startFenceHoldfast(['--fence-signing-key', key, '--http-listen', `127.0.0.1:${httpPort}`]);
  keysUrl = `http://127.0.0.1:${httpPort}/fence-keys`;
  ring = await fetchFenceKeys(keysUrl);
  unary = new HoldfastClient(holdfast.server.addr, { transport: 'unary' });
  session = new HoldfastClient(holdfast.server.addr);
}, 60_000);
afterAll(async () => {
  for (const app of apps) await app.close();
  unary?.close();
  session?.close();
  await holdfast?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function guardedApp(lock: string, options: { leaseEndSkewMs?: number } = {}): Promise<HttpApp> {
  const app = await startHttpApp(httpFenceGuard(new MemoryFenceStore(), { keys: ring, lock, ...options }));
  apps.push(app);
  return app;
}

/** Resolves once `ready()` holds (a renewal and the passing of time are what the test waits for), within 20 s. */
async function until(ready: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('grants carry signed fences the guard admits', () => {
  it('a Lock from acquire sends all three headers; the guard, keyed from /fence-keys, admits it and refuses it under another lock', async () => {
    const name = uniqueName('e2e/a b');
    const lock = await unary.acquire(name, { ttlMs: 10_000 });
    try {
      const fence = ring.verify(lock.signedFence!);
      expect(fence).toMatchObject({ namespace: 'default', lock: name, token: lock.fencingToken });
      expect(fence.leaseEndMs).not.toBeNull();
      expect(lock.fence({})).toEqual({
        [FENCE_HEADERS.fence]: lock.signedFence,
        [FENCE_HEADERS.lock]: encodeURIComponent(name),
        [FENCE_HEADERS.token]: `${lock.fencingToken}`,
      });
      const app = await guardedApp(name);
      expect((await app.send('/doc', lock.fence({}))).status).toBe(200);
      expect(app.seen[0].current).toEqual({
        namespace: 'default',
        lock: name,
        token: lock.fencingToken,
        leaseEndMs: fence.leaseEndMs,
        keyId: ring.keyIds[0],
        signed: true,
      });
      const other = await guardedApp(uniqueName('e2e-other'));
      expect((await other.send('/doc', lock.fence({}))).body.error).toBe('fence_for_another_lock');
      // Renew re-signs: a later lease end, the new fence sent from then on.
      const first = lock.signedFence!;
      await until(() => Date.now() > Number(fence.leaseEndMs) - 10_000 + 5, 'the clock to move');
      await lock.renew();
      expect(lock.signedFence).not.toBe(first);
      expect(parseSignedFence(lock.signedFence!).leaseEndMs! > fence.leaseEndMs!).toBe(true);
    } finally {
      await lock.release();
    }
  });

  it("a Hold's renewed fence is admitted after its first fence's lease end passed, with the lease-end check on (the first is refused)", async () => {
    const name = uniqueName('e2e-hold');
    const skew = 200;
    const app = await guardedApp(name, { leaseEndSkewMs: skew });
    const lease = await unary.hold(name, { ttlMs: 1500 }); // renewed about every 500 ms
    try {
      const first = lease.signedFence!;
      const firstEnd = Number(parseSignedFence(first).leaseEndMs);
      expect((await app.send('/doc', lease.fence({}), 'PUT', 'first')).status).toBe(200);
      await until(() => Date.now() > firstEnd + skew + 50 && lease.signedFence !== first, "the first fence's lease end to pass");
      expect(lease.signal.aborted).toBe(false);
      const renewed = await app.send('/doc', lease.fence({}), 'PUT', 'renewed');
      expect(renewed.status).toBe(200);
      // Negative control: the first fence, its lease over by the guard's clock, is refused.
      const stale = await app.send('/doc', { [FENCE_HEADERS.fence]: first }, 'PUT', 'old');
      expect(stale.status).toBe(409);
      expect(stale.body).toMatchObject({ error: 'fence_lease_ended', lock: name, lease_end_ms: `${firstEnd}`, skew_ms: `${skew}` });
      expect(app.stored).toEqual(['first', 'renewed']);
    } finally {
      await lease.release();
    }
  });

  it('a lock kept by a session (hold): its fence states no lease end, so it passes the lease-end check for as long as the session keeps it', async () => {
    const name = uniqueName('e2e-session');
    const app = await guardedApp(name, { leaseEndSkewMs: 0 });
    const lease = await session.hold(name, { ttlMs: 1000 });
    try {
      expect(parseSignedFence(lease.signedFence!).leaseEndMs).toBeNull();
      const grantedAt = Date.now();
      expect((await app.send('/doc', lease.fence({}))).status).toBe(200);
      await until(() => Date.now() > grantedAt + 1500, 'a ttl to pass');
      expect((await app.send('/doc', lease.fence({}))).status).toBe(200);
      // An acquire over the session is not kept by it (nothing renews it): its fence states its end.
      const lock = await session.acquire(uniqueName('e2e-session-acquire'), { ttlMs: 5000 });
      expect(parseSignedFence(lock.signedFence!).leaseEndMs).not.toBeNull();
      await lock.release();
    } finally {
      await lease.release();
    }
  });

  it('lock sets: each member its own fence (LockSet, LeaseSet), a HoldSet renewal refreshing every member', async () => {
    const [one, two] = [uniqueName('e2e-set'), uniqueName('e2e-set')];
    const appTwo = await guardedApp(two);
    const set = await unary.holdSet([one, two], { ttlMs: 1500 });
    try {
      const firsts = set.members.map((m) => m.signedFence!);
      expect(firsts.map((f) => ring.verify(f).lock)).toEqual(set.members.map((m) => m.name));
      expect((await appTwo.send('/doc', set.fenceMember({}, two))).status).toBe(200);
      await until(() => set.members.every((m, i) => m.signedFence !== firsts[i]), 'a renewal of the set');
      expect((await appTwo.send('/doc', set.fenceMember({}, two))).status).toBe(200);
      expect((await appTwo.send('/doc', set.fenceMember({}, one))).body.error).toBe('fence_for_another_lock');
    } finally {
      await set.release();
    }
    const locks = await unary.acquireSet([one, two], { ttlMs: 5000 });
    try {
      for (const m of locks.members) expect(ring.verify(m.signedFence!)).toMatchObject({ lock: m.name, token: m.fencingToken });
      expect((await appTwo.send('/doc', locks.fenceMember({}, two))).status).toBe(200);
    } finally {
      await locks.release();
    }
  });

  it('over gRPC: lease.fenceMetadata() and a Leadership fence pass the interceptor; the handler reads the fence', async () => {
    const name = uniqueName('e2e-grpc');
    const grpc = await startRawGrpc([grpcFenceGuard(new MemoryFenceStore(), { keys: ring, lock: name })]);
    apps.push({ close: () => grpc.stop() });
    const leader = await campaign(unary, name, 'me');
    try {
      expect(await grpc.put('leader', leader.fenceMetadata())).toEqual({ ok: true });
      expect(grpc.seen[0][1]).toMatchObject({ lock: name, token: leader.fencingToken, signed: true });
      const md = leader.fenceMetadata();
      md.set('holdfast-fence-token', `${leader.fencingToken + 1n}`);
      expect(await grpc.put('forged', md)).toMatchObject({ ok: false, code: status.INVALID_ARGUMENT });
    } finally {
      await leader.resign();
    }
  });
});

describe.each(STORE_KINDS)("Kleppmann's scenario with real grants, %s store", (kind) => {
  it('the holder whose lease ran out is refused, no update lost, no false refusal', async () => {
    const open = await openStore(kind);
    const name = uniqueName('e2e-kleppmann');
    const app = await startHttpApp(httpFenceGuard(open.store, { keys: await fetchFenceKeys(keysUrl), lock: name }));
    try {
      const a = await unary.acquire(name, { ttlMs: 1500 }); // A: nothing renews it; A is "paused" from here
      expect((await app.send('/doc', a.fence({}), 'PUT', 'a-1')).status).toBe(200);
      const b = await session.acquire(name, { ttlMs: 10_000, waitMs: 20_000 }); // granted once A's lease ran out
      expect(b.fencingToken).toBeGreaterThan(a.fencingToken);
      expect((await app.send('/doc', b.fence({}), 'PUT', 'b-1')).status).toBe(200);
      const late = await app.send('/doc', a.fence({}), 'PUT', 'a-2');
      expect(late.body).toMatchObject({ error: 'stale_fencing_token', lock: name, token: `${a.fencingToken}`, newest: `${b.fencingToken}` });
      expect((await app.send('/doc', b.fence({}), 'PUT', 'b-2')).status).toBe(200);
      expect(app.stored).toEqual(['a-1', 'b-1', 'b-2']);
      await b.release();
    } finally {
      await app.close();
      await open.stop();
    }
  }, 60_000);
});
