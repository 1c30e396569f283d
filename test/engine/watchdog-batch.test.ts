// The watchdog's batch renewal on a real redis-server: hundreds of kept leases renewed by a few
// renew-batch-3 calls per tick (more than one call's worth), each lease settled by its own
// answer in the batch: one taken and one freed mid-way end as such, the others live on.
import { beforeAll, describe, expect, it } from 'vitest';
import { lockKeys, scriptKeys } from '../../src/engine/keys';
import { lockLibrary } from '../../src/redis/functions';
import { RENEWALS_PER_CALL } from '../../src/redis/store';
import { keepHold, lockRequest, useEngines, type KeptHold, type TestEngine } from '../support/engine';
import { deleteLockState, uniqueName, type TestRedis } from '../support/redis';
import { waitFor } from '../support/wait';

let redis: TestRedis;
let a: TestEngine;
let b: TestEngine;

const env = useEngines(2);
beforeAll(() => void ([redis, a, b] = [env.redis, ...env.engines]));

const fcalls = async () => Number(/cmdstat_fcall:calls=(\d+)/.exec(await redis.client.info('commandstats'))?.[1] ?? 0);
const renewed = (holds: KeptHold[]) => holds.reduce((sum, h) => sum + h.renewals.length, 0);

describe('batch renewal', () => {
  it('renews more leases than one call carries with a few calls per tick, and settles each by its own answer', async () => {
    const count = 2 * RENEWALS_PER_CALL + 50;
    const names = Array.from({ length: count }, () => uniqueName('batch'));
    const holds = await Promise.all(names.map((name) => keepHold(a, name, 900)));
    await waitFor('every lease renewed once', () => holds.every((h) => h.renewals.length >= 1));

    const [callsBefore, renewalsBefore] = [await fcalls(), renewed(holds)];
    await waitFor('every lease renewed twice more', () => holds.every((h) => h.renewals.length >= 3));
    const [calls, renewals] = [(await fcalls()) - callsBefore, renewed(holds) - renewalsBefore];
    // One call per lease would make calls ≥ renewals; the batches make a handful per tick.
    expect(calls * 10).toBeLessThan(renewals);

    // Two leases in the middle of the batches: one taken by someone else, one whose grant was
    // given back (its only hold, by hold id, as another server's Release): gone, so 'expired'.
    const [taken, released] = [holds[RENEWALS_PER_CALL + 7], holds[RENEWALS_PER_CALL + 8]];
    const [takenName, releasedName] = [names[RENEWALS_PER_CALL + 7], names[RENEWALS_PER_CALL + 8]];
    await deleteLockState(redis, takenName);
    expect(await b.engine.acquire(lockRequest(takenName, 10_000))).not.toBeNull();
    const keys = scriptKeys(lockKeys('hf', releasedName), 4);
    await lockLibrary().call(redis.client, 'release', keys, [released.grant.token, released.holdId, 0, 0, '', '', '']);
    expect(await taken.lost).toMatchObject({ reason: 'taken' });
    expect(await released.lost).toMatchObject({ reason: 'expired' });

    const others = holds.filter((h) => h !== taken && h !== released);
    const counts = others.map((h) => h.renewals.length);
    await waitFor('every other lease renewed again', () => others.every((h, i) => h.renewals.length > counts[i]));
    expect(others.every((h) => h.renewals.every((left) => left === 900))).toBe(true);
    expect(a.engine.stats().keptLeases).toBe(others.length);
    await Promise.all(others.map((h) => h.letGo()));
    expect(a.engine.stats().keptLeases).toBe(0);
  });
});
