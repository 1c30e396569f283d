// Multi-locks on real servers: sets asked for in opposite orders never deadlock; a set not
// complete by its deadline (or cancelled) leaves nothing held; each member has its own fencing
// token; ReleaseSet frees the set; the loss of one member ends a held set, naming it. Over the
// SDK's session and over unary calls and HoldSet streams alike.
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient, LeaseLostError, NotAcquiredError } from '../../clients/ts/index';
import { LostReason } from '../../gen/holdfast/v1/lock';
import { useServers } from '../support/fixture';
import { deleteLockState, uniqueName } from '../support/redis';
import { waitFor } from '../support/wait';

const env = useServers(2);

// Over the SDK's default transport (sets held under the client's session) and over unary calls
// and HoldSet streams: the same behaviour either way.
describe.each(['session', 'unary'] as const)('lock sets (transport %s)', (transport) => {
  let a: HoldfastClient;
  let b: HoldfastClient;
  beforeAll(() => {
    a = new HoldfastClient(env.servers[0].addr, { transport });
    b = new HoldfastClient(env.servers[1].addr, { transport });
  });
  afterAll(() => {
    a?.close();
    b?.close();
  });

  async function heldBy(names: string[]): Promise<number[]> {
    return Promise.all(names.map(async (name) => (await a.inspect(name)).holders.length));
  }

  it('two clients taking {a,b,c} and {c,b,a} over and over on two servers finish every round, never together', async () => {
    const names = ['a', 'b', 'c'].map((n) => uniqueName(`set-${n}`));
    const rounds = 25;
    let inside = 0;
    let overlaps = 0;
    const worker = async (client: HoldfastClient, order: string[], form: 'hold' | 'acquire') => {
      for (let i = 0; i < rounds; i++) {
        const set =
          form === 'hold' ? await client.holdSet(order, { ttlMs: 5000, waitMs: 30_000 }) : await client.acquireSet(order, { ttlMs: 5000, waitMs: 30_000 });
        if (++inside > 1) overlaps++;
        await new Promise((resolve) => setImmediate(resolve));
        inside--;
        await set.release();
      }
    };
    await Promise.all([worker(a, names, 'hold'), worker(b, [...names].reverse(), 'hold'), worker(b, [names[1], names[2], names[0]], 'acquire')]);
    expect(overlaps).toBe(0);
    expect(await heldBy(names)).toEqual([0, 0, 0]);
  });

  it('grants each member its own fencing token, in canonical order, and ReleaseSet frees them all', async () => {
    const names = [uniqueName('z'), uniqueName('m'), uniqueName('a')];
    const set = await a.acquireSet(names, { ttlMs: 10_000, owner: 'o', value: 'v' });
    expect(set.members.map((m) => m.name)).toEqual([...names].sort());
    for (const name of names) {
      const info = await b.inspect(name);
      expect(info.holders).toMatchObject([{ owner: 'o', value: 'v', fencingToken: set.fencingToken(name) }]);
    }
    expect(new Set(set.members.map((m) => m.token)).size).toBe(3);
    expect(set.expiresAt).toBeGreaterThan(Date.now() + 5000);
    expect(await set.release()).toEqual([]);
    expect(await heldBy(names)).toEqual([0, 0, 0]);
    expect(await set.release()).toEqual([...names].sort()); // already released: listed, not an error
  });

  it('rolls a partial grant back when the deadline passes, for AcquireSet and HoldSet', async () => {
    const names = ['a', 'b', 'c'].map((n) => uniqueName(`partial-${n}`));
    const last = [...names].sort().at(-1)!;
    const blocker = await b.acquire(last, { ttlMs: 30_000 });
    await expect(a.acquireSet(names, { ttlMs: 10_000, waitMs: 300 })).rejects.toBeInstanceOf(NotAcquiredError);
    expect(await heldBy(names)).toEqual(names.map((n) => (n === last ? 1 : 0)));
    await expect(a.holdSet(names, { ttlMs: 10_000, waitMs: 300 })).rejects.toBeInstanceOf(NotAcquiredError);
    expect(await heldBy(names)).toEqual(names.map((n) => (n === last ? 1 : 0)));
    // Cancelled while waiting for the last member: the first two are given back too.
    const stop = new AbortController();
    const waiting = a.holdSet(names, { ttlMs: 10_000, waitMs: 30_000, signal: stop.signal });
    await waitFor('the set to wait for its last member', async () => (await a.inspect(last)).waiters === 1);
    expect(await heldBy(names)).toEqual([1, 1, 1]);
    stop.abort();
    await expect(waiting).rejects.toThrow();
    await waitFor('the first members to be given back', async () => (await heldBy(names)).join() === names.map((n) => (n === last ? 1 : 0)).join());
    await blocker.release();
  });

  it('keeps the first members alive while it waits longer than their ttl for the last', async () => {
    const names = ['a', 'b'].map((n) => uniqueName(`long-${n}`));
    const blocker = await b.acquire(names[1], { ttlMs: 30_000 });
    const waiting = a.acquireSet(names, { ttlMs: 300, waitMs: 10_000 });
    await waitFor('the set to wait', async () => (await a.inspect(names[1])).waiters === 1);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // over three of the first member's leases
    await blocker.release();
    const set = await waiting;
    expect((await a.inspect(names[0])).holders[0].fencingToken).toBe(set.fencingToken(names[0]));
    await set.release();
  });

  it('ends a held set as a whole when one member is lost, naming it; the others stay closed until their leases run out', async () => {
    const names = [uniqueName('lost-a'), uniqueName('lost-b')];
    const set = await a.holdSet(names, { ttlMs: 1500 });
    await deleteLockState(env.redis, names[1]); // as a crash or a flush would
    await new Promise<void>((resolve) => set.signal.addEventListener('abort', () => resolve(), { once: true }));
    const reason = set.signal.reason as LeaseLostError;
    expect(reason).toBeInstanceOf(LeaseLostError);
    expect(reason.message).toContain(names[1]);
    expect([LostReason.LOST_REASON_EXPIRED, LostReason.LOST_REASON_TAKEN]).toContain(reason.code);
    // The other member's hold is given back as the loss is reported (not before it), and the lock
    // stays closed for the lease its client was told of: held with no holds, then free.
    await waitFor('the other member given back and still closed', async () => {
      const { holders } = await b.inspect(names[0]);
      return holders.length === 1 && holders[0].holdCount === 0;
    });
    await waitFor('the other member to be freed', async () => (await b.inspect(names[0])).holders.length === 0);
  });

  it('refuses bad sets with INVALID_ARGUMENT naming the field', async () => {
    await expect(a.acquireSet([])).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: 'names is required: at least one lock name' });
    await expect(a.acquireSet(['x', 'x'])).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: 'names lists "x" twice' });
    await expect(a.acquireSet(['ok', ''])).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: 'names[1]: name is required' });
    const many = Array.from({ length: 65 }, (_, i) => `n${i}`);
    await expect(a.holdSet(many)).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: 'names has 65 entries; at most 64 are allowed' });
  });
});
