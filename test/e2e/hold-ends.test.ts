// When a Hold's lock is freed, for every way a Hold can end. The rule under test: no server grants
// a lock while a client SDK can still consider an earlier lease of it valid. Only the holder's own
// word (Release, or a cancel from a live client) frees a lock at once; a frozen, killed or cut-off
// holder keeps it until its lease has run out. A server started with --release-on-disconnect
// (the old rule) is the negative control: the same checks catch it granting too early.
import { status } from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient } from '../../clients/ts/index';
import { LostReason } from '../../gen/holdfast/v1/lock';
import { startHoldingChild, startSdkHoldingChild } from '../support/child';
import { connect, type HoldStream, type TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName, type TestRedis } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { startTcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/wait';

// keepalive 1000/1000 ms: a frozen or cut-off peer is found dead within about two seconds, well
// inside the leases used here, so the old rule would free those locks early.
const KEEPALIVE = ['--keepalive-time-ms', '1000', '--keepalive-timeout-ms', '1000'];
let redis: TestRedis;
let server: ServerProcess;
let oldRule: ServerProcess;
let peer: TestClient;
const env = useServers(2, (i) => (i === 0 ? KEEPALIVE : [...KEEPALIVE, '--release-on-disconnect']));
beforeAll(() => void ([redis, server, oldRule, peer] = [env.redis, env.servers[0], env.servers[1], env.clients[0]]));

/** A waiting Acquire by another client; resolves with the epoch ms at which it was granted. */
async function grantTimeOfWaiter(name: string): Promise<number> {
  const grant = await peer.acquire({ name, owner: 'waiter', waitTimeoutMs: '30000' });
  const at = Date.now();
  expect(grant.acquired).toBe(true);
  await peer.release({ name, token: grant.token });
  return at;
}

/** Queues a waiting Acquire by another client; `granted` resolves with the epoch ms of its grant. */
async function queueWaiter(name: string): Promise<{ granted: Promise<number> }> {
  const granted = grantTimeOfWaiter(name);
  await waitFor('the waiter to queue', async () => (await peer.inspect({ name })).waiters === 1);
  return { granted };
}

/** Freezes an SDK holder just after a renewal; returns its expiresAt then and when a waiter got the lock. */
async function freezeAfterRenewal(addr: string) {
  const name = uniqueName();
  const holder = await startSdkHoldingChild(addr, name, 6000);
  try {
    const renewed = await holder.next((line) => line.event === 'renewed');
    holder.child.kill('SIGSTOP');
    const expiresAt = renewed.expiresAt as number;
    const grantedAt = await grantTimeOfWaiter(name);
    holder.child.kill('SIGCONT');
    const firstCheck = await holder.next((line) => line.event === 'first-check-after-freeze');
    return { expiresAt, grantedAt, firstCheck };
  } finally {
    holder.child.kill('SIGKILL');
    await holder.exited;
  }
}

describe('a holder that froze (SIGSTOP) just after a renewal', () => {
  it('keeps its lock until its own expiresAt; thawed, its first check of the signal says lost', async () => {
    const { expiresAt, grantedAt, firstCheck } = await freezeAfterRenewal(server.addr);
    expect(grantedAt).toBeGreaterThanOrEqual(expiresAt);
    expect(grantedAt - expiresAt).toBeLessThan(3000); // and then freed by push, not much later
    expect(firstCheck.aborted).toBe(true);
  });

  it('negative control: with --release-on-disconnect the waiter is granted while the frozen lease still runs', async () => {
    const { expiresAt, grantedAt } = await freezeAfterRenewal(oldRule.addr);
    expect(grantedAt).toBeLessThan(expiresAt);
  });
});

describe('a holder whose connection is cut (TCP proxy)', () => {
  async function cutAfterRenewal(addr: string) {
    const proxy = await startTcpProxy(addr);
    const client = new HoldfastClient(proxy.addr);
    const name = uniqueName();
    try {
      const lease = await client.hold(name, { ttlMs: 6000 });
      const first = lease.expiresAt;
      await waitFor('a renewal', () => lease.expiresAt > first);
      const expiresAt = lease.expiresAt;
      const waiter = await queueWaiter(name);
      proxy.cut();
      await waitFor('the SDK to report the lease lost', () => lease.signal.aborted);
      return { expiresAt, grantedAt: await waiter.granted };
    } finally {
      client.close();
      await proxy.close();
    }
  }

  it('keeps its lock until the holder’s own expiresAt', async () => {
    const { expiresAt, grantedAt } = await cutAfterRenewal(server.addr);
    expect(grantedAt).toBeGreaterThanOrEqual(expiresAt);
    expect(grantedAt - expiresAt).toBeLessThan(3000);
  });

  it('negative control: with --release-on-disconnect the lock goes before the holder’s expiresAt', async () => {
    const { expiresAt, grantedAt } = await cutAfterRenewal(oldRule.addr);
    expect(grantedAt).toBeLessThan(expiresAt);
  });
});

describe('a holder killed with SIGKILL', () => {
  it('keeps its lock until the lease ends; a waiter then gets it by push', async () => {
    const name = uniqueName();
    const holder = await startHoldingChild(server.addr, name, 2000);
    const waiter = await queueWaiter(name);
    holder.child.kill('SIGKILL');
    await holder.exited;
    const inspectedAt = Date.now(); // the lease ends no earlier than this + the lease left
    const [lease] = (await peer.inspect({ name })).holders;
    const leaseEndsAt = inspectedAt + Number(lease.ttlMs);
    const grantedAt = await waiter.granted;
    expect(grantedAt).toBeGreaterThanOrEqual(leaseEndsAt - 5); // Inspect rounds to whole ms
    expect(grantedAt - leaseEndsAt).toBeLessThan(1000);
  });
});

describe('the holder’s own word frees at once', () => {
  it('a clean cancel frees the lock for a waiter at once', async () => {
    const name = uniqueName();
    const stream = peer.hold({ name, ttlMs: '30000' });
    await stream.next((e) => !!e.acquired);
    const other = connect(server.addr);
    try {
      const granted = other.acquire({ name, waitTimeoutMs: '10000' });
      await waitFor('the waiter to queue', async () => (await peer.inspect({ name })).waiters === 1);
      stream.call.cancel();
      expect((await granted).acquired).toBe(true); // long before the 30 s lease
    } finally {
      other.close();
    }
  });
});

describe('ends the server decides', () => {
  it('max_hold_ms ends the hold with lost (MAX_HOLD), and the lease ends with it', async () => {
    const name = uniqueName();
    const stream = peer.hold({ name, ttlMs: '30000', maxHoldMs: '400' });
    const acquired = (await stream.next((e) => !!e.acquired)).acquired!;
    expect(Number(acquired.ttlMs)).toBeLessThanOrEqual(400); // no lease outlives the cap
    expect((await stream.next((e) => !!e.lost)).lost!.code).toBe(LostReason.LOST_REASON_MAX_HOLD);
    expect((await stream.ended).code).toBe(status.ABORTED);
    await waitFor('the lock to be free', async () => (await peer.inspect({ name })).holders.length === 0, 2000);
  });

  it('SIGTERM ends Hold streams with lost (SERVER_SHUTDOWN); their locks stay closed until their leases end', async () => {
    const own = await startServerProcess(redis.url);
    const c = connect(own.addr);
    try {
      const kept = uniqueName();
      const fast = uniqueName();
      const keptStream = c.hold({ name: kept, ttlMs: '1500' });
      const fastStream = c.hold({ name: fast, ttlMs: '30000', releaseOnDisconnect: true });
      await Promise.all([keptStream.next((e) => !!e.acquired), fastStream.next((e) => !!e.acquired)]);
      const waitingHold = c.hold({ name: kept, waitTimeoutMs: '30000' });
      await waitFor('the waiter', async () => (await peer.inspect({ name: kept })).waiters === 1);
      own.process.kill('SIGTERM');
      for (const stream of [keptStream, fastStream]) {
        expect(await stream.ended).toMatchObject({ code: status.UNAVAILABLE });
        expect(stream.events.find((e) => e.lost)?.lost?.code).toBe(LostReason.LOST_REASON_SERVER_SHUTDOWN);
      }
      expect((await waitingHold.ended).code).toBe(status.UNAVAILABLE);
      expect(await own.exited).toBe(0);
      // The client may not have heard of the shutdown: its lock waits for the lease...
      expect((await peer.inspect({ name: kept })).holders).toMatchObject([{ holdCount: 0 }]);
      expect((await peer.acquire({ name: kept })).acquired).toBe(false);
      expect((await peer.acquire({ name: kept, waitTimeoutMs: '5000' })).acquired).toBe(true);
      // ...unless the Hold asked for release_on_disconnect.
      expect((await peer.inspect({ name: fast })).holders).toEqual([]);
    } finally {
      c.close();
      await own.stop();
    }
  });
});

describe('lock-delay', () => {
  it('adds to a vanished holder’s lease, and does not apply after its own Release', async () => {
    const delayed = await startServerProcess(redis.url, ['--lock-delay-ms', '1500']);
    const c = connect(delayed.addr);
    try {
      const name = uniqueName();
      const holder = await startHoldingChild(delayed.addr, name, 1000);
      const waiter = await queueWaiter(name);
      holder.child.kill('SIGKILL');
      await holder.exited;
      const { holders, sentAt } = (await waitFor('the vanished hold to be given back', async () => {
        const sentAt = Date.now();
        const { holders } = await peer.inspect({ name });
        return holders[0]?.holdCount === 0 ? { holders, sentAt } : undefined;
      }))!;
      const lease = holders[0];
      const leaseEndsAt = sentAt + Number(lease.ttlMs);
      expect(Number(lease.ttlMs)).toBeGreaterThan(1000); // the delay is on top of the lease
      expect(await waiter.granted).toBeGreaterThanOrEqual(leaseEndsAt - 5);

      const released = uniqueName();
      const stream = c.hold({ name: released, ttlMs: '30000' });
      const { token, holdId } = (await stream.next((e) => !!e.acquired)).acquired!;
      await c.release({ name: released, token, holdId });
      expect((await c.acquire({ name: released })).acquired).toBe(true);
    } finally {
      c.close();
      await delayed.stop();
    }
  });
});

describe('reentrant holds are given back once each', () => {
  type Way = 'release-hold-id' | 'cancel';
  type Hold = { kind: 'stream'; stream: HoldStream; way: Way } | { kind: 'acquire' };

  const orders = [
    [0, 1, 2],
    [0, 2, 1],
    [1, 0, 2],
    [1, 2, 0],
    [2, 0, 1],
    [2, 1, 0],
  ];
  const ways: [Way, Way][] = [
    ['release-hold-id', 'release-hold-id'],
    ['release-hold-id', 'cancel'],
    ['cancel', 'release-hold-id'],
    ['cancel', 'cancel'],
  ];

  it('two Holds and an Acquire by one owner, given back in every order by Release and cancel', async () => {
    for (const order of orders) {
      for (const [wayA, wayB] of ways) {
        const name = uniqueName();
        const streamA = peer.hold({ name, owner: 'same', ttlMs: '30000' });
        const { token, holdId: idA } = (await streamA.next((e) => !!e.acquired)).acquired!;
        const streamB = peer.hold({ name, owner: 'same', ttlMs: '30000' });
        const { holdId: idB, holdCount } = (await streamB.next((e) => !!e.acquired)).acquired!;
        expect((await peer.acquire({ name, owner: 'same' })).holdCount).toBe(3);
        expect(holdCount).toBe(2);
        const holds: (Hold & { id?: string })[] = [
          { kind: 'stream', stream: streamA, way: wayA, id: idA },
          { kind: 'stream', stream: streamB, way: wayB, id: idB },
          { kind: 'acquire' },
        ];
        let otherGranted = false;
        const other = connect(server.addr);
        const waiting = other.acquire({ name, owner: 'other', waitTimeoutMs: '30000' }).then((g) => {
          otherGranted = true;
          return g;
        });
        await waitFor('the other owner to queue', async () => (await peer.inspect({ name })).waiters === 1);
        const label = `order ${order} ways ${wayA}/${wayB}`;
        for (const [step, index] of order.entries()) {
          const hold = holds[index];
          const left = 2 - step;
          if (hold.kind === 'acquire') {
            expect(await peer.release({ name, token }), label).toMatchObject({ holdCount: left });
          } else if (hold.way === 'release-hold-id') {
            expect(await peer.release({ name, token, holdId: hold.id }), label).toMatchObject({ holdCount: left });
            expect((await hold.stream.ended).code, label).toBe(status.OK);
            hold.stream.call.cancel(); // what an SDK does next: it must give back nothing more
          } else {
            hold.stream.call.cancel();
          }
          if (left > 0) {
            await waitFor(`${left} holds (${label})`, async () => (await peer.inspect({ name })).holders[0]?.holdCount === left);
            expect(otherGranted, label).toBe(false);
            for (const still of holds.filter((h, i) => h.kind === 'stream' && !order.slice(0, step + 1).includes(i))) {
              if (still.kind === 'stream')
                expect(
                  still.stream.events.some((e) => e.lost),
                  label,
                ).toBe(false);
            }
          }
        }
        const grant = await waiting;
        expect(grant.acquired, label).toBe(true);
        await other.release({ name, token: grant.token });
        other.close();
      }
    }
  });

  it('a stream whose connection is lost gives back its hold once, and its lease still keeps the lock closed', async () => {
    const name = uniqueName();
    const proxy = await startTcpProxy(server.addr);
    const viaProxy = connect(proxy.addr);
    try {
      const lost = viaProxy.hold({ name, owner: 'same', ttlMs: '1500' });
      const { token } = (await lost.next((e) => !!e.acquired)).acquired!;
      const kept = peer.hold({ name, owner: 'same', ttlMs: '1500' });
      const { holdId } = (await kept.next((e) => !!e.acquired)).acquired!;
      await peer.acquire({ name, owner: 'same', ttlMs: '1500' });
      const waiter = await queueWaiter(name);
      proxy.cut();
      await waitFor('the lost stream’s hold to be given back', async () => (await peer.inspect({ name })).holders[0]?.holdCount === 2);
      expect(await peer.release({ name, token })).toMatchObject({ holdCount: 1 }); // the Acquire's
      expect(await peer.release({ name, token, holdId })).toMatchObject({ released: true, holdCount: 0 });
      // Every hold is given back, but the lost stream's client may still count on its lease.
      // The lease ends no earlier than (when Inspect was sent) + the lease left it reported.
      const { holders, sentAt } = (await waitFor('the lease left', async () => {
        const sentAt = Date.now();
        const { holders } = await peer.inspect({ name });
        return holders[0]?.holdCount === 0 ? { holders, sentAt } : undefined;
      }))!;
      const leaseEndsAt = sentAt + Number(holders[0].ttlMs);
      expect(await waiter.granted).toBeGreaterThanOrEqual(leaseEndsAt - 5);
    } finally {
      viaProxy.close();
      await proxy.close();
    }
  });

  it('a Release by token with only stream holds left ends the newest stream with OK; the older keeps its hold', async () => {
    const name = uniqueName();
    const older = peer.hold({ name, owner: 'same', ttlMs: '30000' });
    const { token } = (await older.next((e) => !!e.acquired)).acquired!;
    const newer = peer.hold({ name, owner: 'same', ttlMs: '30000' });
    await newer.next((e) => !!e.acquired);
    expect(await peer.release({ name, token })).toMatchObject({ released: false, holdCount: 1 });
    expect((await newer.ended).code).toBe(status.OK);
    newer.call.cancel();
    expect((await peer.acquire({ name, owner: 'other' })).acquired).toBe(false);
    expect((await peer.inspect({ name })).holders).toMatchObject([{ holdCount: 1 }]);
    expect(older.events.some((e) => e.lost)).toBe(false);
    older.call.cancel();
    await waitFor('the lock to be free', async () => (await peer.inspect({ name })).holders.length === 0);
  });
});
