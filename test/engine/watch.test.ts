// Engine tier: watching a lock. A watcher on one engine hears, in order, what another engine's
// grants, value changes, releases and an expiry did, each with the state after it.
import { beforeAll, describe, expect, it } from 'vitest';
import type { WatchUpdate } from '../../src/engine/watch-room';
import { lockRequest, useEngines, type TestEngine } from '../support/engine';
import { uniqueName } from '../support/redis';
import { waitFor } from '../support/wait';

let a: TestEngine;
let b: TestEngine;

const env = useEngines(2);
beforeAll(() => void ([a, b] = env.engines));

/** Watches `name` on `engine`, collecting every update. */
function follow(engine: TestEngine, name: string): { updates: WatchUpdate[]; stop(): void; next(event: string, count?: number): Promise<WatchUpdate> } {
  const updates: WatchUpdate[] = [];
  const stop = engine.engine.watch(name, { onUpdate: (u) => updates.push(u), onEnd: () => {} });
  const next = (event: string, count = 1) => waitFor(`${count} "${event}" update(s) of ${name}`, () => updates.filter((u) => u.event === event)[count - 1]);
  return { updates, stop, next };
}

describe('watch', () => {
  it("hears another engine's grant, value change and release, in order, with the state after each", async () => {
    const name = uniqueName();
    const watch = follow(b, name);
    try {
      expect((await watch.next('state')).state.holders).toEqual([]);
      const grant = (await a.engine.acquire(lockRequest(name, 10_000, { owner: 'writer', value: 'v1' })))!;
      const granted = await watch.next('granted');
      expect(granted.holder).toMatchObject({ owner: 'writer', fencingToken: grant.fencingToken, value: 'v1' });
      await a.engine.setValue(name, grant.token, 'v2');
      expect((await watch.next('value_changed')).holder).toMatchObject({ value: 'v2' });
      await a.engine.release(name, grant.token);
      const released = await watch.next('released');
      expect(released.holder?.fencingToken).toBe(grant.fencingToken);
      expect(released.state.holders).toEqual([]);
      expect(watch.updates.map((u) => u.event)).toEqual(['state', 'granted', 'value_changed', 'released']);
    } finally {
      watch.stop();
    }
  });

  it('hears an expiry, which publishes nothing, from its own timer; a stopped watch hears nothing more', async () => {
    const name = uniqueName();
    const watch = follow(b, name);
    await watch.next('state');
    const grant = (await a.engine.acquire(lockRequest(name, 300)))!;
    await watch.next('granted');
    expect((await watch.next('expired')).holder?.fencingToken).toBe(grant.fencingToken);
    watch.stop();
    const seen = watch.updates.length;
    // Negative control: after stop(), a grant reaches no listener.
    const again = (await a.engine.acquire(lockRequest(name, 10_000)))!;
    const other = follow(b, name);
    await other.next('state');
    expect(other.updates[0].state.holders.map((h) => h.fencingToken)).toEqual([again.fencingToken]);
    other.stop();
    expect(watch.updates).toHaveLength(seen);
  });
});
