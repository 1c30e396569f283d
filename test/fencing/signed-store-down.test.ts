// Fail-closed in bounded time: a guard whose store's Redis or PostgreSQL is killed (SIGKILL by
// PID) or frozen (SIGSTOP by PID: it takes connections and never answers) answers 503 /
// UNAVAILABLE fence_store_unavailable within the store's bound (1 s by default; asserted against a
// generous 3 s ceiling), never the handler. Both ways a store gets its client: built by the kit
// (connect: the bounding options set) and passed in with the driver's defaults (open: the store
// enforces the bound around the call). Then the backend comes back and the guard with it.
import { status } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FenceStore, grpcFenceGuard, httpFenceGuard, PostgresFenceStore, RedisFenceStore } from '../../clients/ts/fencing';
import { uniqueName } from '../support/redis';
import { type FencePostgres, type FenceRedis, signal, startFencePostgres, startFenceRedis } from './backends';
import { startHttpApp, type HttpApp } from './http-app';
import { startRawGrpc, type RawGrpc } from './raw-grpc';
import { signed, vectorRing } from './signing';
import { asHeaders, asMetadata } from './wire-send';

const CEILING_MS = 3000; // for a 1000 ms bound, on a busy 2-core machine
const ring = vectorRing();

interface Guarded {
  how: string;
  http: HttpApp;
  grpc: RawGrpc;
  lock: string;
  close(): Promise<void>;
}

async function guarded(how: string, store: FenceStore, close: () => Promise<void>): Promise<Guarded> {
  const lock = uniqueName('down');
  const http = await startHttpApp(httpFenceGuard(store, { keys: ring, lock }));
  const grpc = await startRawGrpc([grpcFenceGuard(store, { keys: ring, lock })]);
  return {
    how,
    http,
    grpc,
    lock,
    async close() {
      await http.close();
      await grpc.stop();
      await close();
    },
  };
}

/** The two ways a store gets its client: built by the kit (connect), and the user's own on the driver's defaults (open). */
async function bothWays(
  built: string,
  own: FenceStore & { close(): Promise<void> },
  driver: string,
  users: FenceStore,
  closeUsers: () => Promise<void>,
): Promise<Guarded[]> {
  return [await guarded(`kit-built ${built} (connect)`, own, () => own.close()), await guarded(`the user's ${driver}, defaults (open)`, users, closeUsers)];
}

let token = 1n;
/** A write with a fresh signed fence (newer than every earlier one, so only the store's health decides). */
const fenceOf = (lock: string) => ({ fence: [signed({ lock, token: token++ })] });

async function expectAdmitted(g: Guarded): Promise<void> {
  expect((await g.http.send('/doc', asHeaders(fenceOf(g.lock)), 'PUT', 'ok')).status).toBe(200);
  expect(await g.grpc.put('ok', asMetadata(fenceOf(g.lock)))).toEqual({ ok: true });
}

/** Both transports answer fence_store_unavailable within the ceiling, the message naming the lock and `cause`; the handler never runs. */
async function expectUnavailable(g: Guarded, cause: RegExp): Promise<void> {
  const stored = [g.http.stored.length, g.grpc.stored.length];
  let started = performance.now();
  const res = await g.http.send('/doc', asHeaders(fenceOf(g.lock)), 'PUT', 'while-down');
  const httpMs = performance.now() - started;
  expect({ how: g.how, status: res.status, error: res.body.error, lock: res.body.lock }).toEqual({
    how: g.how,
    status: 503,
    error: 'fence_store_unavailable',
    lock: g.lock,
  });
  expect(res.body.message).toMatch(new RegExp(`^fence store unavailable for lock "${g.lock}": `));
  expect(res.body.message).toMatch(cause);
  started = performance.now();
  const call = await g.grpc.put('while-down', asMetadata(fenceOf(g.lock)));
  const grpcMs = performance.now() - started;
  expect(call).toMatchObject({ ok: false, code: status.UNAVAILABLE });
  expect((call as { details: string }).details).toMatch(cause);
  expect({ how: g.how, httpMs: httpMs < CEILING_MS, grpcMs: grpcMs < CEILING_MS }).toEqual({ how: g.how, httpMs: true, grpcMs: true });
  expect([g.http.stored.length, g.grpc.stored.length]).toEqual(stored);
  console.log(`fail-closed, ${g.how}: http ${httpMs.toFixed(0)} ms, grpc ${grpcMs.toFixed(0)} ms: ${res.body.message}`);
}

describe("the Redis store's redis-server", () => {
  let redis: FenceRedis;
  const guards: Guarded[] = [];
  beforeAll(async () => {
    redis = await startFenceRedis();
    const defaults = new Redis(redis.url).on('error', () => {}); // ioredis's defaults: an offline queue, 20 retries
    guards.push(
      ...(await bothWays('client', await RedisFenceStore.connect(redis.url), 'ioredis', await RedisFenceStore.open(defaults), async () =>
        defaults.disconnect(),
      )),
    );
  }, 60_000);
  afterAll(async () => {
    for (const g of guards) await g.close();
    await redis?.stop();
  });

  it('killed by PID: 503 / UNAVAILABLE within the bound; admitted again once it is back', async () => {
    for (const g of guards) await expectAdmitted(g);
    await redis.kill();
    await expectUnavailable(guards[0], /its Redis (is not connected|refused the connection)/);
    await expectUnavailable(guards[1], /no answer from its Redis within 1000 ms/);
    await redis.start();
    // ioredis reconnects on its own schedule: wait for the kit's client to be ready again.
    await waitFor(async () => (await guards[0].http.send('/doc', asHeaders(fenceOf(guards[0].lock)))).status === 200);
    for (const g of guards) await expectAdmitted(g);
  });

  it('frozen by PID (SIGSTOP: connected, never answering): 503 / UNAVAILABLE within the bound', async () => {
    signal(redis.pid(), 'SIGSTOP');
    try {
      for (const g of guards) await expectUnavailable(g, /no answer from its Redis within 1000 ms/);
    } finally {
      signal(redis.pid(), 'SIGCONT');
    }
    for (const g of guards) await expectAdmitted(g);
  });
});

describe("the PostgreSQL store's server", () => {
  let pg: FencePostgres;
  const guards: Guarded[] = [];
  beforeAll(async () => {
    pg = await startFencePostgres();
    const defaults = new Pool({ connectionString: pg.url }).on('error', () => {}); // pg's defaults: no connection or query timeout
    guards.push(
      ...(await bothWays('pool', await PostgresFenceStore.connect(pg.url), 'pg Pool', await PostgresFenceStore.open(defaults), () => defaults.end())),
    );
  }, 60_000);
  afterAll(async () => {
    for (const g of guards) await g.close().catch(() => {});
    await pg?.stop();
  });

  it('frozen by PID (SIGSTOP on the postmaster and its backends): 503 / UNAVAILABLE within the bound', async () => {
    for (const g of guards) await expectAdmitted(g);
    const pids = pg.pids();
    for (const pid of pids) signal(pid, 'SIGSTOP');
    try {
      for (const g of guards) await expectUnavailable(g, /no (answer from|connection to) PostgreSQL within 1000 ms/);
    } finally {
      for (const pid of pids) signal(pid, 'SIGCONT');
    }
    await waitFor(async () => (await guards[0].http.send('/doc', asHeaders(fenceOf(guards[0].lock)))).status === 200);
    await expectAdmitted(guards[0]);
  });

  it('killed by PID (SIGKILL on the postmaster and its backends): 503 / UNAVAILABLE within the bound', async () => {
    // The whole server: a backend orphaned by its postmaster can still answer until it notices.
    for (const pid of pg.pids()) signal(pid, 'SIGKILL');
    for (const g of guards) await expectUnavailable(g, /PostgreSQL|connection/);
  });
});

/** Polls `ready` (a reconnect has no event the test can await through the guard) until true, for up to 20 s. */
async function waitFor(ready: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + 20_000;
  while (!(await ready())) {
    if (Date.now() > until) throw new Error('the guard did not admit again within 20 s of its backend coming back');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
