// The TypeScript SDK with transport 'session' (clients/ts/session.ts): acquire, release, renew and
// hold over one Session stream per client, against real holdfast server processes on a real
// redis-server. test/e2e/sdk.test.ts runs the SDK's general behaviours over both transports.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient, LeaseLostError, NotAcquiredError, isServiceError } from '../../clients/ts/index';
import { lockKeys } from '../../src/engine/keys';
import { freePort } from '../../src/redis/embedded';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { startServerProcess } from '../support/server';
import { abortReason } from '../support/abort';
import { startRecordingServer } from '../support/recording-server';
import { status } from '@grpc/grpc-js';

const env = useServers(1);
let client: HoldfastClient;
let other: HoldfastClient;

beforeAll(() => {
  client = new HoldfastClient(env.servers[0].addr, { transport: 'session' });
  other = new HoldfastClient(env.servers[0].addr, { transport: 'unary' });
});
afterAll(() => {
  client?.close();
  other?.close();
});

describe('over a session', () => {
  it('acquires, renews and releases; reentrancy keeps the token, a new grant gets a higher fencing token', async () => {
    const name = uniqueName();
    const first = await client.acquire(name, { ttlMs: 10_000, owner: 'me' });
    const again = await client.acquire(name, { ttlMs: 10_000, owner: 'me' });
    expect(again).toMatchObject({ token: first.token, fencingToken: first.fencingToken, holdCount: 2 });
    expect(await first.renew(20_000)).toBe(20_000);
    expect(first.expiresAt).toBeGreaterThan(Date.now() + 10_000);
    await expect(other.acquire(name)).rejects.toBeInstanceOf(NotAcquiredError);
    expect(await again.release()).toEqual({ released: false, holdCount: 1 });
    expect(await first.release()).toEqual({ released: true, holdCount: 0 });
    const next = await client.acquire(name);
    expect(next.fencingToken).toBeGreaterThan(first.fencingToken);
    await next.release();
    // Released for real: the unary client sees it free.
    expect((await other.inspect(name)).holders).toEqual([]);
  });

  it('answers each of many operations in flight at once to its own caller', async () => {
    const names = Array.from({ length: 200 }, () => uniqueName());
    const locks = await Promise.all(names.map((name, i) => client.acquire(name, { ttlMs: 10_000, owner: `owner-${i}` })));
    expect(locks.map((l) => l.name)).toEqual(names);
    expect(new Set(locks.map((l) => l.token)).size).toBe(names.length);
    const holders = await Promise.all(names.slice(0, 20).map(async (name) => (await other.inspect(name)).holders[0]?.owner));
    expect(holders).toEqual(names.slice(0, 20).map((_, i) => `owner-${i}`));
    const released = await Promise.all(locks.map((l) => l.release()));
    expect(released.every((r) => r.released)).toBe(true);
    expect((await other.inspect(names[199])).holders).toEqual([]);
  });

  it('keeps a hold through many renewal ticks of a short ttl, then releases it', async () => {
    const name = uniqueName();
    // 1 s: short enough for many renewal ticks, long enough that a busy 2-core machine's pauses do not lose it.
    const lease = await client.hold(name, { ttlMs: 1_000 });
    const firstExpiry = lease.expiresAt;
    await new Promise((resolve) => setTimeout(resolve, 5_000)); // about 15 renewal ticks: the duration is what is tested
    expect(lease.signal.aborted ? String(lease.signal.reason) : 'held').toBe('held');
    expect(lease.expiresAt).toBeGreaterThan(firstExpiry + 3_500);
    expect((await other.inspect(name)).holders).toHaveLength(1);
    await lease.release();
    expect((await other.inspect(name)).holders).toEqual([]);
    expect(lease.signal.aborted).toBe(false); // a release is not a loss
  });

  it('reports a hold lost when its grant is taken from it, and the session goes on', async () => {
    const name = uniqueName();
    const lease = await client.hold(name, { ttlMs: 1_000 });
    await other.rpc.release({ name, token: lease.token, holdId: '' }); // the grant given back behind its back
    const reason = await abortReason<LeaseLostError>(lease.signal);
    expect(reason).toBeInstanceOf(LeaseLostError);
    expect(reason).toMatchObject({ lockName: name, source: 'server' });
    const after = await client.acquire(name);
    await after.release();
  });

  it('grants a waiting acquire by push when the holder releases', async () => {
    const name = uniqueName();
    const held = await other.acquire(name, { ttlMs: 60_000 });
    const waiting = client.acquire(name, { waitMs: 30_000 });
    await expect.poll(async () => (await other.inspect(name)).waiters, { timeout: 10_000 }).toBe(1);
    const releasedAt = Date.now();
    await held.release();
    const lock = await waiting;
    expect(Date.now() - releasedAt).toBeLessThan(10_000); // by push, not at the end of the wait or the lease
    expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
    await lock.release();
  });

  it('stops a waiting hold when its signal aborts, leaving no grant behind', async () => {
    const name = uniqueName();
    const held = await other.acquire(name, { ttlMs: 60_000 });
    const stop = new AbortController();
    const waiting = client.hold(name, { waitMs: 30_000, signal: stop.signal });
    await expect.poll(async () => (await other.inspect(name)).waiters, { timeout: 10_000 }).toBe(1);
    stop.abort(new Error('stopped'));
    await expect(waiting).rejects.toThrow('stopped');
    await expect.poll(async () => (await other.inspect(name)).waiters, { timeout: 10_000 }).toBe(0);
    await held.release();
    // Nothing of the cancelled hold was granted: the lock is free.
    expect((await other.inspect(name)).holders).toEqual([]);
    await (await other.acquire(name)).release();
  });

  it('gives the same errors as the unary calls for bad input', async () => {
    const name = uniqueName();
    const cases: [string, (c: HoldfastClient) => Promise<unknown>][] = [
      ['ttl too short', (c) => c.acquire(name, { ttlMs: 5 })],
      ['empty name', (c) => c.acquire('')],
      ['control character in the name', (c) => c.hold('bad\u0001name')],
      ['shared semaphore', (c) => c.acquire(name, { shared: true, limit: 3 })],
      [
        'a grant released twice',
        async (c) => {
          const lock = await c.acquire(name);
          await lock.release();
          return lock.release();
        },
      ],
    ];
    for (const [what, call] of cases) {
      const viaSession = await call(client).then(
        () => 'no error',
        (e: unknown) => e,
      );
      const viaUnary = await call(other).then(
        () => 'no error',
        (e: unknown) => e,
      );
      expect(isServiceError(viaUnary), what).toBe(true);
      expect(viaSession?.constructor, what).toBe(viaUnary?.constructor);
      expect(viaSession, what).toMatchObject({ code: (viaUnary as { code: number }).code, message: (viaUnary as Error).message });
    }
  });

  it('counts a lease from the session’s anchors, never past the lease in Redis, however old the session', async () => {
    const aged = new HoldfastClient(env.servers[0].addr, { transport: 'session' });
    try {
      const keepOpen = await aged.hold(uniqueName(), { ttlMs: 5_000 }); // opens the session, and a held lock keeps it open
      await new Promise((resolve) => setTimeout(resolve, 1_500)); // its age is what is tested
      const name = uniqueName();
      const lease = await aged.hold(name, { ttlMs: 2_000 });
      const lock = await aged.acquire(uniqueName(), { ttlMs: 2_000 });
      // Both wall clocks of this machine: counted from the operation's send time instead of the
      // session's open, each deadline would be about 1.5 s past Redis's.
      for (const [held, expiresAt] of [
        [lease, lease.expiresAt],
        [lock, lock.expiresAt],
      ] as const) {
        const expiry = Number(await env.redis.client.zscore(lockKeys('hf', held.name).holders, held.token));
        expect(expiresAt).toBeLessThanOrEqual(expiry);
        expect(expiresAt).toBeGreaterThan(Date.now());
      }
      await lease.release();
      await lock.release();
      await keepOpen.release();
    } finally {
      aged.close();
    }
  });

  it('says it cannot reach the server in the unary call’s words', async () => {
    const addr = `127.0.0.1:${await freePort()}`; // nothing listens there
    const [viaSession, viaUnary] = await Promise.all(
      (['session', 'unary'] as const).map(async (transport) => {
        const nowhere = new HoldfastClient(addr, { transport });
        try {
          return await nowhere.acquire(uniqueName()).catch((e: unknown) => e);
        } finally {
          nowhere.close();
        }
      }),
    );
    expect(viaUnary).toMatchObject({ code: 14, message: expect.stringContaining(`cannot reach holdfast at ${addr}: connection refused`) });
    expect(viaSession).toMatchObject({ code: 14, message: (viaUnary as Error).message });
  });

  it('refuses an unknown transport, naming the option', () => {
    expect(() => new HoldfastClient('127.0.0.1:1', { transport: 'udp' as never })).toThrow(/transport must be 'session' or 'unary', got "udp"/);
  });
});

describe('when the server process dies mid-session', () => {
  it('rejects operations in flight, reports held leases lost before their deadline, and opens a new session on the restarted server', async () => {
    let server = await startServerProcess(env.redis.url);
    const addr = server.addr;
    const dying = new HoldfastClient(addr, { transport: 'session' });
    try {
      const heldName = uniqueName();
      const lease = await dying.hold(heldName, { ttlMs: 5_000 });
      const busy = uniqueName();
      await other.acquire(busy, { ttlMs: 60_000 });
      const waiting = dying.acquire(busy, { waitMs: 30_000 }).catch((e: unknown) => e);
      await expect.poll(async () => (await other.inspect(busy)).waiters, { timeout: 10_000 }).toBe(1);

      process.kill(server.pid, 'SIGKILL');
      const reason = await abortReason<LeaseLostError>(lease.signal);
      const lostAt = Date.now();
      expect(reason).toMatchObject({ lockName: heldName, source: 'stream', message: expect.stringContaining('the session ended') });
      expect(lostAt).toBeLessThan(lease.expiresAt); // told at once, not when the local deadline passed
      const err = await waiting;
      expect(isServiceError(err)).toBe(true);
      expect((err as Error).message).toContain(`the session with holdfast at ${addr} ended`);
      expect((err as Error).message).toMatch(/UNAVAILABLE/);
      await server.exited;

      server = await startServerProcess(env.redis.url, [], {}, { port: server.port });
      const name = uniqueName();
      const lock = await dying.acquire(name, { ttlMs: 10_000 });
      const again = await dying.hold(uniqueName(), { ttlMs: 1_000 });
      expect(again.signal.aborted).toBe(false);
      await again.release();
      await lock.release();
    } finally {
      dying.close();
      await server.stop();
    }
  });
});

describe('when the server process is frozen', () => {
  it('fails an operation after the call timeout, as the unary call does', async () => {
    const server = await startServerProcess(env.redis.url);
    const viaSession = new HoldfastClient(server.addr, { transport: 'session', callTimeoutMs: 500 });
    const viaUnary = new HoldfastClient(server.addr, { transport: 'unary', callTimeoutMs: 500 });
    try {
      await (await viaSession.acquire(uniqueName())).release(); // both connected
      await (await viaUnary.acquire(uniqueName())).release();
      process.kill(server.pid, 'SIGSTOP');
      const [sessionErr, unaryErr] = await Promise.all([
        viaSession.acquire(uniqueName()).catch((e: unknown) => e),
        viaUnary.acquire(uniqueName()).catch((e: unknown) => e),
      ]);
      expect(unaryErr).toMatchObject({ code: 4 }); // DEADLINE_EXCEEDED
      expect(sessionErr).toMatchObject({ code: 4, message: expect.stringContaining('Deadline exceeded after 500 ms') });
    } finally {
      viaSession.close();
      viaUnary.close();
      await server.stop('SIGKILL');
    }
  });
});

describe('a session cut off without an error (the server frozen)', () => {
  it('finds it by a ping unanswered within the call timeout: held leases are lost at once, and the next operation opens a new session', async () => {
    const server = await startServerProcess(env.redis.url);
    const cut = new HoldfastClient(server.addr, { callTimeoutMs: 1_000 });
    try {
      const name = uniqueName();
      const lease = await cut.hold(name, { ttlMs: 60_000 });
      process.kill(server.pid, 'SIGSTOP');
      const stuck = await cut.acquire(uniqueName()).catch((e: unknown) => e);
      expect(stuck).toMatchObject({ code: 4 }); // DEADLINE_EXCEEDED after 1 s; then the ping goes out
      const reason = await abortReason<LeaseLostError>(lease.signal);
      expect(reason).toMatchObject({ lockName: name, source: 'stream', message: expect.stringContaining('no answer to a ping within 1000 ms') });
      expect(Date.now()).toBeLessThan(lease.expiresAt); // long before its 60 s lease could end
      process.kill(server.pid, 'SIGCONT');
      // The server heard the cancel (its client was alive) or will let the lease run out: either
      // way the next operation goes over a new session.
      const again = await cut.acquire(uniqueName(), { ttlMs: 5_000 });
      await again.release();
    } finally {
      cut.close();
      await server.stop('SIGKILL');
    }
  });
});

describe('a server without the Session RPC (older than it)', () => {
  it('gets unary calls instead, with nothing done twice: its UNIMPLEMENTED means the session did nothing', async () => {
    const old = await startRecordingServer(undefined, ['session']);
    const client = new HoldfastClient(old.addr);
    try {
      // The recording server refuses every call it records: the errors are the unary calls' own.
      const refused = { code: status.PERMISSION_DENIED, details: 'recorded by the test server' };
      const [acquire, hold] = await Promise.all([client.acquire('a').catch((e: unknown) => e), client.hold('b').catch((e: unknown) => e)]);
      expect(acquire).toMatchObject(refused);
      expect(hold).toMatchObject(refused);
      await expect(client.acquireSet(['c', 'd'])).rejects.toMatchObject(refused);
      await expect(client.holdSet(['e', 'f'])).rejects.toMatchObject(refused);
      // Both operations in flight on the one session went again as unary calls, once each; no
      // session was asked for after the first UNIMPLEMENTED.
      expect(old.calls.map((c) => c.method).sort()).toEqual(['acquire', 'acquireSet', 'hold', 'holdSet']);
    } finally {
      client.close();
      old.stop();
    }
  });
});

describe('lock sets', () => {
  it('a held set goes over the session, not a HoldSet stream of its own (transport unary: a HoldSet stream)', async () => {
    const recording = await startRecordingServer();
    const [overSession, unary] = [new HoldfastClient(recording.addr), new HoldfastClient(recording.addr, { transport: 'unary' })];
    try {
      await expect(overSession.holdSet(['a', 'b'])).rejects.toMatchObject({ code: status.PERMISSION_DENIED });
      expect(recording.calls.map((c) => c.method)).toEqual(['session']);
      await expect(unary.holdSet(['a', 'b'])).rejects.toMatchObject({ code: status.PERMISSION_DENIED });
      expect(recording.calls.map((c) => c.method)).toEqual(['session', 'holdSet']);
    } finally {
      overSession.close();
      unary.close();
      recording.stop();
    }
  });

  it("keeps a held set through many renewal ticks with the session's other locks; a member taken loses the set and not the others", async () => {
    const names = [uniqueName(), uniqueName()];
    const single = await client.hold(uniqueName(), { ttlMs: 1_000 });
    const set = await client.holdSet(names, { ttlMs: 1_000 });
    const firstExpiry = set.expiresAt;
    await new Promise((resolve) => setTimeout(resolve, 4_000)); // about 12 renewal ticks: the duration is what is tested
    expect(set.signal.aborted ? String(set.signal.reason) : 'held').toBe('held');
    expect(set.expiresAt).toBeGreaterThan(firstExpiry + 2_500);
    for (const member of set.members) expect((await other.inspect(member.name)).holders).toMatchObject([{ fencingToken: member.fencingToken }]);
    // One member's grant taken (as a flush or a failover would): the set is lost, naming it; the single hold is not.
    const taken = set.members[1];
    await other.rpc.release({ name: taken.name, token: taken.token, holdId: '' }); // the grant given back behind its back
    const lost = await abortReason<LeaseLostError>(set.signal);
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect(lost).toMatchObject({ source: 'server' });
    expect(lost.message).toContain(taken.name);
    expect(single.signal.aborted).toBe(false);
    await single.release();
    await set.release();
  });
});

describe('pings while holding locks', () => {
  it('anchor the leases’ deadlines at the latest pongs, which never pass the lease in Redis', async () => {
    const pinging = new HoldfastClient(env.servers[0].addr, { sessionPingMs: 200 });
    try {
      const name = uniqueName();
      const lease = await pinging.hold(name, { ttlMs: 1_500 });
      // Internal state: the pongs it has (the open, then the two latest pongs).
      const anchors = () => (pinging as unknown as { session: { current?: { anchors: { sentAt: number }[] } } }).session.current?.anchors ?? [];
      await expect.poll(() => anchors().length, { timeout: 10_000 }).toBe(3);
      const firstPong = anchors()[1].sentAt;
      await expect.poll(() => anchors()[1].sentAt, { timeout: 10_000 }).toBeGreaterThan(firstPong); // kept moving
      await expect.poll(() => lease.expiresAt, { timeout: 10_000 }).toBeGreaterThan(Date.now() + 500); // renewed meanwhile
      const expiry = Number(await env.redis.client.zscore(lockKeys('hf', name).holders, lease.token));
      expect(lease.expiresAt).toBeLessThanOrEqual(expiry);
      expect(lease.signal.aborted).toBe(false);
      await lease.release();
    } finally {
      pinging.close();
    }
  });

  it('refuses a bad ping interval, naming the option', () => {
    expect(() => new HoldfastClient('127.0.0.1:1', { sessionPingMs: 0 })).toThrow(/sessionPingMs must be a whole number of ms above 0, got 0/);
  });
});

describe('closing the client', () => {
  it('is not needed for a process to exit once it holds nothing: an idle session closes itself', async () => {
    const child = spawn(process.execPath, [join(__dirname, '../support/sdk-exit-child.js'), env.servers[0].addr], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000); // still running then: the open stream kept it alive
    expect(await exited).toBe(0);
    clearTimeout(timer);
    expect(out).toBe('done\n');
  });

  it('closes the session cleanly, which releases its holds at once', async () => {
    const closing = new HoldfastClient(env.servers[0].addr, { transport: 'session' });
    const name = uniqueName();
    await closing.hold(name, { ttlMs: 60_000 });
    closing.close();
    await expect.poll(async () => (await other.inspect(name)).holders.length, { timeout: 10_000 }).toBe(0);
  });
});
