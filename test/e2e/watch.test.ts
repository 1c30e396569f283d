// Watch on real servers: changes made through one replica reach a watcher on another, in order;
// a killed holder shows as lost, then expired; a frozen watcher gets the latest state, not a
// backlog; many watchers cost one Redis subscription per server; no token ever shows.
import { setMaxListeners } from 'node:events';
import { status, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient, type LockChange } from '../../clients/ts/index';
import { LostReason, WatchEvent, type WatchResponse } from '../../gen/holdfast/v1/lock';
import { lockKeys } from '../../src/engine/keys';
import { startHoldingChild, startJsonLineChild } from '../support/child';
import { collect } from '../support/collect';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { waitFor } from '../support/wait';

const env = useServers(2);
let sdkA: HoldfastClient;
let sdkB: HoldfastClient;

beforeAll(() => {
  sdkA = new HoldfastClient(env.servers[0].addr);
  sdkB = new HoldfastClient(env.servers[1].addr);
});
afterAll(() => {
  sdkA?.close();
  sdkB?.close();
});

/** Watches `name` on `client` until the test's end (the returned abort). */
function watching(client: HoldfastClient, name: string) {
  const stop = new AbortController();
  const changes = collect(client.watch(name, { signal: stop.signal }));
  return { changes, stop: () => stop.abort() };
}

const is = (event: LockChange['event'], owner?: string) => (c: LockChange) => c.event === event && (owner === undefined || c.holder?.owner === owner);

describe('Watch', () => {
  it('a watcher on replica B sees grant, release, and a grant to another holder on replica A, in order, each within a second', async () => {
    const name = uniqueName('watch');
    const { changes, stop } = watching(sdkB, name);
    await changes.next(is('state'));
    expect(changes.items[0]).toMatchObject({ event: 'state', holders: [], name });

    const timed = async (act: () => Promise<unknown>, match: (c: LockChange) => boolean) => {
      const from = changes.items.length;
      const at = performance.now();
      await act();
      const change = await changes.next(match, 5000, from);
      return { change, ms: performance.now() - at };
    };
    const first = await timed(() => sdkA.acquire(name, { owner: 'first', ttlMs: 30_000, value: '10.0.0.1:8080' }), is('granted', 'first'));
    expect(first.change.holder).toMatchObject({ owner: 'first', mode: 'exclusive', value: '10.0.0.1:8080', holdCount: 1 });
    expect(first.change.holders.map((h) => h.owner)).toEqual(['first']);
    const lock = await sdkA.inspect(name);
    expect(first.change.holder!.fencingToken).toBe(lock.fencingToken);

    const grant = await sdkA.acquire(name, { owner: 'first', ttlMs: 30_000 }); // re-entered: no change of holder
    await grant.release();
    const released = await timed(() => grant.release(), is('released', 'first'));
    expect(released.change.holders).toEqual([]);
    const second = await timed(() => sdkA.acquire(name, { owner: 'second', ttlMs: 30_000 }), is('granted', 'second'));
    expect(second.change.holder!.fencingToken).toBeGreaterThan(first.change.holder!.fencingToken);

    expect(changes.items.map((c) => `${c.event}:${c.holder?.owner ?? ''}`)).toEqual(['state:', 'granted:first', 'released:first', 'granted:second']);
    for (const { ms } of [first, released, second]) expect(ms).toBeLessThan(1000);
    stop();
  });

  it('publishes the holder value with the grant and each change of it (SetValue), without a change of holder', async () => {
    const name = uniqueName('watch-value');
    const { changes, stop } = watching(sdkB, name);
    await changes.next(is('state'));
    const lease = await sdkA.hold(name, { owner: 'leader', ttlMs: 5000, value: 'one' });
    await changes.next(is('granted', 'leader'));
    await lease.setValue('two');
    const changed = await changes.next(is('value_changed'));
    expect(changed.holder).toMatchObject({ owner: 'leader', value: 'two', fencingToken: lease.fencingToken });
    expect((await sdkA.inspect(name)).holders[0].value).toBe('two');
    await lease.release();
    await changes.next(is('released', 'leader'));
    await expect(lease.setValue('three')).rejects.toMatchObject({ code: status.NOT_FOUND });
    stop();
  });

  it('shows a SIGKILLed holder as lost (disconnected) at once, then expired when its lease has run out', async () => {
    const name = uniqueName('watch-kill');
    const { changes, stop } = watching(sdkB, name);
    await changes.next(is('state'));
    const holder = await startHoldingChild(env.servers[0].addr, name, 1500);
    const granted = await changes.next(is('granted'));
    holder.child.kill('SIGKILL');
    const lost = await changes.next(is('lost'));
    expect(lost.lostReason).toBe(LostReason.LOST_REASON_DISCONNECTED);
    expect(lost.holder).toMatchObject({ fencingToken: granted.holder!.fencingToken, holdCount: 0 });
    expect(lost.holders).toHaveLength(1); // still closed: its lease may still run
    const expired = await changes.next(is('expired'));
    expect(expired.holder!.fencingToken).toBe(granted.holder!.fencingToken);
    expect(expired.holders).toEqual([]);
    stop();
  });

  it('a watcher frozen with SIGSTOP gets the latest state after SIGCONT, not the backlog', async () => {
    const name = uniqueName('watch-frozen');
    const frozen = startJsonLineChild('watch-child.js', [env.servers[1].addr, name]);
    await frozen.next((l) => l.event === 'state');
    const live = watching(sdkB, name);
    await live.changes.next(is('state'));
    frozen.child.kill('SIGSTOP');
    try {
      const before = frozen.lines.length;
      // Each change carries a 1 KiB value, so that the stream's flow-control window fills up.
      const value = 'v'.repeat(1000);
      const rounds = 250;
      for (let i = 0; i < rounds; i++) {
        const lock = await sdkA.acquire(name, { owner: `round-${i}`, ttlMs: 30_000, value });
        await lock.release();
      }
      await sdkA.acquire(name, { owner: 'final', ttlMs: 30_000 });
      await live.changes.next(is('granted', 'final'));
      const delivered = live.changes.items.length;
      frozen.child.kill('SIGCONT');
      const last = await frozen.next((l) => (l.holders as string[])?.[0] === 'final');
      const afterThaw = frozen.lines.length - before;
      // The live watcher saw many changes; the frozen one got a bounded part of them and then the state now.
      expect(delivered).toBeGreaterThan(150);
      expect(afterThaw).toBeLessThan(delivered / 2);
      expect(frozen.lines.at(-1)).toEqual(last);
    } finally {
      frozen.child.kill('SIGCONT');
      frozen.child.kill('SIGKILL');
      live.stop();
    }
  }, 90_000);

  it('1 000 watchers of one lock cost one Redis subscription per server, and each sees the grant', async () => {
    const name = uniqueName('watch-many');
    const stop = new AbortController();
    setMaxListeners(2000, stop.signal);
    const clients = [sdkA, sdkB];
    const watchers = Array.from({ length: 1000 }, (_, i) => collect(clients[i % 2].watch(name, { signal: stop.signal })));
    await Promise.all(watchers.map((w) => w.next(is('state'), 30_000)));
    const channel = lockKeys('hf', name).channel;
    const [, subscribers] = (await env.redis.client.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
    expect(subscribers).toBe(2);
    await sdkA.acquire(name, { owner: 'one', ttlMs: 30_000 });
    await Promise.all(watchers.map((w) => w.next(is('granted', 'one'), 30_000)));
    stop.abort();
    await waitFor('the servers to leave the channel', async () => {
      const [, left] = (await env.redis.client.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
      return left === 0;
    });
  });

  it('never shows a token in any Watch message', async () => {
    const name = uniqueName('watch-token');
    const raw = env.clients[1].client;
    const messages: string[] = [];
    const call = raw.watch({ name });
    const released = new Promise<void>((resolve) =>
      call.on('data', (m: WatchResponse) => {
        messages.push(JSON.stringify(m));
        if (m.event === WatchEvent.WATCH_EVENT_RELEASED) resolve();
      }),
    );
    call.on('error', () => {});
    await waitFor('the first message', () => messages.length > 0);
    const acquired = await env.clients[0].acquire({ name, owner: 'o', ttlMs: '30000', value: 'addr' });
    const hold = env.clients[0].hold({ name, owner: 'o', ttlMs: '30000' }); // re-enters the grant
    const held = await hold.next((e) => !!e.acquired);
    await new Promise<void>((resolve, reject) => raw.setValue({ name, token: acquired.token, value: 'addr2' }, (err) => (err ? reject(err) : resolve())));
    // Watch reports the difference between two reads of the lock: a value changed and released
    // before the watcher's next read shows up as the release alone, so wait for it to be seen.
    await waitFor('the new value to be watched', () => messages.some((m) => m.includes('addr2')));
    await env.clients[0].release({ name, token: acquired.token, holdId: held.acquired!.holdId });
    await env.clients[0].release({ name, token: acquired.token });
    await released;
    call.cancel();
    const everything = messages.join('\n');
    // Negative control: the same search finds the token where it is meant to be.
    expect(JSON.stringify(acquired)).toContain(acquired.token);
    expect(everything).not.toContain(acquired.token);
    expect(everything).toContain('addr2');
  });

  it('refuses a bad name or an oversized value with INVALID_ARGUMENT naming the field', async () => {
    const bad = await new Promise<ServiceError>((resolve) => {
      const call = env.clients[0].client.watch({ name: '' });
      call.on('error', resolve);
      call.on('data', () => {});
    });
    expect(bad).toMatchObject({ code: status.INVALID_ARGUMENT, details: 'name is required' });
    await expect(sdkA.acquire(uniqueName(), { value: 'x'.repeat(1025) })).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: 'value is 1025 bytes; at most 1024 are allowed',
    });
  });
});
