// The TypeScript SDK's lease bound against a real server through a real TCP proxy that stalls or
// cuts the network: a confirmation that arrives late is never taken as a live lease, release()
// gives back only its own stream's hold, and releaseOnDisconnect reaches the server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient, LeaseLostError, NotAcquiredError, type Lease } from '../../clients/ts/index';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/wait';

// Short keepalive: the server gives up on a stalled connection within half a second.
const env = useServers(1, ['--keepalive-time-ms', '200', '--keepalive-timeout-ms', '300']);
let direct: HoldfastClient;
let proxy: TcpProxy;
let proxied: HoldfastClient;

beforeAll(() => {
  direct = new HoldfastClient(env.servers[0].addr);
});
afterAll(() => direct?.close());

/** A fresh proxy and a client that dials through it, for each test. */
async function throughProxy(): Promise<void> {
  proxy = await startTcpProxy(env.servers[0].addr);
  proxied = new HoldfastClient(proxy.addr);
}
async function closeProxy(): Promise<void> {
  proxied.close();
  await proxy.close();
}

/** Resolves with the reason `signal` aborts with, and when (performance.now()). */
function aborted(signal: AbortSignal): Promise<{ reason: LeaseLostError; at: number }> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve({ reason: signal.reason, at: performance.now() });
    else signal.addEventListener('abort', () => resolve({ reason: signal.reason, at: performance.now() }), { once: true });
  });
}

async function holderOwners(name: string): Promise<string[]> {
  return (await direct.inspect(name)).holders.map((h) => h.owner);
}

describe('a confirmation delayed past the lease', () => {
  it('rejects a grant that arrives after its lease could have ended; the lock stays with the next holder', async () => {
    await throughProxy();
    try {
      const name = uniqueName();
      const first = await direct.acquire(name, { ttlMs: 30_000 });
      const held: Lease[] = [];
      const holding = proxied.hold(name, { ttlMs: 300, waitMs: 20_000, owner: 'late' });
      const outcome = holding.then(
        (lease) => (held.push(lease), lease),
        (err: unknown) => err,
      );
      // The Hold request is queued at the server: now freeze the network, then let the grant happen.
      await waitFor('the Hold to queue', async () => (await direct.inspect(name)).waiters === 1);
      proxy.stall();
      await first.release();
      await waitFor('the grant to the stalled Hold', async () => (await holderOwners(name)).includes('late'));
      // The server gives up on the stalled connection and the lease runs out: someone else gets the lock.
      const taker = await direct.acquire(name, { ttlMs: 30_000, waitMs: 20_000, owner: 'taker' });
      expect(held).toEqual([]);
      proxy.resume();

      const err = await outcome;
      expect(err).toBeInstanceOf(LeaseLostError);
      expect(err).toMatchObject({ lockName: name, source: 'deadline' });
      expect(await holderOwners(name)).toEqual(['taker']);
      expect(await direct.checkFencingToken(name, taker.fencingToken)).toMatchObject({ live: true });
    } finally {
      await closeProxy();
    }
  });

  it('aborts a lease whose renewals are held back before anyone else gets the lock; late renewals do not revive it', async () => {
    await throughProxy();
    try {
      const name = uniqueName();
      const lease = await proxied.hold(name, { ttlMs: 300, owner: 'stalled' });
      expect(lease.expiresAt).toBeLessThanOrEqual(Date.now() + 300);
      const lost = aborted(lease.signal);
      proxy.stall();
      const taker = await direct.acquire(name, { ttlMs: 30_000, waitMs: 20_000, owner: 'taker' });
      const takenAt = performance.now();
      const takenAtEpoch = Date.now();

      const { reason, at } = await lost;
      expect(at).toBeLessThan(takenAt);
      expect(reason).toMatchObject({ lockName: name, source: 'deadline' });
      expect(lease.expiresAt).toBeLessThan(takenAtEpoch);

      proxy.resume(); // the renewals the server sent before it gave up arrive now
      await waitFor('the proxied channel to answer again', () =>
        proxied.inspect(name).then(
          () => true,
          () => false,
        ),
      );
      expect(lease.signal.aborted).toBe(true);
      expect(lease.expiresAt).toBeLessThan(takenAtEpoch);
      expect(await holderOwners(name)).toEqual(['taker']);
      expect(await direct.checkFencingToken(name, taker.fencingToken)).toMatchObject({ live: true });
    } finally {
      await closeProxy();
    }
  });
});

describe('release()', () => {
  it('gives back only its own hold of a reentrant grant', async () => {
    const name = uniqueName();
    const a = await direct.hold(name, { owner: 'same', ttlMs: 600 });
    const b = await direct.hold(name, { owner: 'same', ttlMs: 600 });
    expect(b.token).toBe(a.token);
    expect(b.holdId).not.toBe(a.holdId);
    expect((await direct.inspect(name)).holders).toEqual([expect.objectContaining({ owner: 'same', holdCount: 2 })]);

    await a.release();
    expect(a.signal.aborted).toBe(false); // a release is not a loss
    // Two of b's renewals later (a lease renewed after a's stream ended), b still holds it alone.
    const after = b.expiresAt;
    await waitFor('two renewals of the remaining hold', () => b.expiresAt > after + b.ttlMs / 2 || b.signal.aborted);
    expect(b.signal.aborted).toBe(false);
    expect((await direct.inspect(name)).holders).toEqual([expect.objectContaining({ owner: 'same', holdCount: 1 })]);
    await expect(direct.acquire(name, { owner: 'other' })).rejects.toBeInstanceOf(NotAcquiredError);

    await b.release();
    expect(await holderOwners(name)).toEqual([]);
  });
});

describe('releaseOnDisconnect', () => {
  it('frees the lock when the connection is cut; without it the lease runs out first', async () => {
    await throughProxy();
    try {
      const [kept, freed] = [uniqueName(), uniqueName()];
      const keptLease = await proxied.hold(kept, { ttlMs: 30_000, owner: 'kept' });
      const freedLease = await proxied.hold(freed, { ttlMs: 30_000, owner: 'freed', releaseOnDisconnect: true });
      proxy.cut(); // one connection carries both streams: the server sees them end together
      const [keptEnd, freedEnd] = await Promise.all([aborted(keptLease.signal), aborted(freedLease.signal)]);
      expect([keptEnd.reason.source, freedEnd.reason.source]).toEqual(['stream', 'stream']);

      await waitFor('the releaseOnDisconnect lock to be freed', async () => (await holderOwners(freed)).length === 0);
      expect(await holderOwners(kept)).toEqual(['kept']);
    } finally {
      await closeProxy();
    }
  });
});
