// Engine tier: the lease group (src/engine/lease-group.ts), on a real redis-server, no gRPC. Its
// rules, once for Hold (a group of one), HoldSet (a group of N) and Session (an open group):
// renewals in the watchdog's batches, one earliest end per round trip and only forward, the first
// loss ending a set and giving the others back, the three end rules, joining and leaving an open
// group, max hold and the time-out.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLOCK_DRIFT, deadlineEndWaitMs, driftMarginMs } from '../../src/engine/clock-drift';
import type { GroupEnd, GroupLease, HoldAsk, LeaseGroup, LeaseSet } from '../../src/engine/lease-group';
import { Mode, type LostReason } from '../../src/engine/types';
import { lockRequest, useEngines, type TestEngine } from '../support/engine';
import { deleteLockState, uniqueName, type TestRedis } from '../support/redis';
import { waitFor } from '../support/wait';

let redis: TestRedis;
let a: TestEngine;
let b: TestEngine;

const env = useEngines(2);
beforeAll(() => void ([redis, a, b] = [env.redis, ...env.engines]));

const NEVER = new AbortController().signal;

function ask(ttlMs: number, extra: Partial<HoldAsk> = {}): HoldAsk {
  const params = { owner: '', ttlMs, waitMs: 0, mode: Mode.EXCLUSIVE, limit: 1, requestId: '', value: '' };
  return { params, askedWaitMs: 0, maxHoldMs: 0, releaseOnDisconnect: false, ...extra };
}

interface Lost {
  set: LeaseSet;
  member: GroupLease;
  reason: LostReason;
  message: string;
}

/** A group on engine `on`, with what it reported. */
function recorded(on: TestEngine = a): { group: LeaseGroup; reports: GroupEnd[]; losses: Lost[] } {
  const reports: GroupEnd[] = [];
  const losses: Lost[] = [];
  const group = on.engine.group(
    { renewed: (end) => reports.push(end), lost: (set, member, reason, message) => losses.push({ set, member, reason, message }) },
    { lockDelayMs: 0 },
  );
  return { group, reports, losses };
}

/** Whether another caller can take `name` now, and if so gives it back. */
async function free(name: string): Promise<boolean> {
  const grant = await b.engine.acquire(lockRequest(name, 1000));
  if (grant) await b.engine.release(name, grant.token);
  return grant !== null;
}

const fcalls = async () => Number(/cmdstat_fcall:calls=(\d+)/.exec(await redis.client.info('commandstats'))?.[1] ?? 0);
const endOf = (r: GroupEnd) => r.leaseStart + r.ttlMs;

describe('a lease group', () => {
  it('renews every member in the watchdog batches and reports one earliest end per round trip, never once per member', async () => {
    const { group, reports } = recorded();
    const names = Array.from({ length: 120 }, () => uniqueName('group'));
    await Promise.all(names.map((name) => group.hold(name, ask(900), NEVER)));
    const [callsBefore, reportsBefore] = [await fcalls(), reports.length];
    await waitFor('six reports', () => reports.length >= reportsBefore + 6);
    const [calls, told] = [(await fcalls()) - callsBefore, reports.length - reportsBefore];
    // Each member renewed three times or more: one call or report per renewal would be over 360.
    expect(told).toBeLessThanOrEqual(calls + 1); // at most one report per round trip
    expect(calls).toBeLessThan(40);
    expect(reports.slice(-3).every((r) => r.members === names.length && r.ttlMs === 900)).toBe(true);
    for (const name of names) expect(await free(name)).toBe(false);
    group.end({ byHolder: true });
    await waitFor('every member given back', async () => (await Promise.all(names.map(free))).every(Boolean));
  });

  it('reports the earliest confirmed end, only forward; a member that joins with an earlier end is covered by the next report', async () => {
    const { group, reports } = recorded();
    await group.hold(uniqueName(), ask(600), NEVER);
    await group.hold(uniqueName(), ask(3000), NEVER);
    await waitFor('four reports', () => reports.length >= 4);
    // The short lease ends first, so it is the group's; each report moves the end forward.
    expect(reports.every((r) => r.ttlMs === 600)).toBe(true);
    for (let i = 1; i < reports.length; i++) expect(endOf(reports[i])).toBeGreaterThan(endOf(reports[i - 1]));
    group.end({ byHolder: true });

    // A member whose lease ends before the last report: its holder counts it from its grant, so
    // the next report (its first renewal) tells an end earlier than the one reported before.
    const joined = recorded();
    await joined.group.hold(uniqueName(), ask(3000), NEVER);
    await waitFor('a report', () => joined.reports.length >= 1);
    const last = endOf(joined.reports.at(-1)!);
    await joined.group.hold(uniqueName(), ask(600), NEVER);
    const count = joined.reports.length;
    await waitFor('a report after the join', () => joined.reports.length > count);
    expect(joined.reports[count].ttlMs).toBe(600);
    expect(endOf(joined.reports[count])).toBeLessThan(last);
    joined.group.end({ byHolder: true });
  });

  it('ends a set at its first loss: the loss names the member, the others are kept to their lease end', async () => {
    const { group, losses } = recorded();
    const names = [uniqueName('set'), uniqueName('set'), uniqueName('set')];
    const held = (await group.holdSet(names, ask(1500), NEVER))!;
    expect(held.grants.map((g) => g.name)).toEqual([...names].sort());
    const [gone, ...others] = held.grants.map((g) => g.name);
    await deleteLockState(redis, gone);
    await waitFor('the loss', () => losses.length === 1);
    expect(losses[0]).toMatchObject({ set: held.set, reason: 'expired', message: expect.stringContaining(`lock "${gone}": the grant is gone`) });
    expect(group.size).toBe(0);
    // Not the holder's word: the others stay closed until the leases their holder was told of end.
    for (const name of others) {
      const info = await b.engine.inspect(name);
      expect(info.holders.map((h) => h.holdCount)).toEqual([0]);
      expect(await free(name)).toBe(false);
    }
    await waitFor('the others free once their leases ran out', async () => (await Promise.all(others.map(free))).every(Boolean));
    expect(losses).toHaveLength(1); // one report for the set
  });

  it('a member released with its token ends its set on the holder word: the others are free at once', async () => {
    const { group, losses } = recorded();
    const names = [uniqueName('set'), uniqueName('set')];
    const held = (await group.holdSet(names, ask(30_000), NEVER))!;
    const [first, second] = held.grants;
    await a.engine.release(first.name, first.grant.token, { holdId: first.holdId });
    expect(losses).toMatchObject([{ reason: 'released', member: { name: first.name } }]);
    await waitFor('the other member free', () => free(second.name));
  });

  it('a set of one (a Hold) is lost alone and its loss is not named; a timeout and a cancel hold nothing', async () => {
    const { group, losses } = recorded();
    const name = uniqueName();
    const held = (await group.hold(name, ask(600), NEVER))!;
    expect(held.set.named).toBe(false);
    await deleteLockState(redis, name);
    await waitFor('the loss', () => losses.length === 1);
    expect(losses[0].message).toMatch(/^the grant is gone/);

    const taken = (await b.engine.acquire(lockRequest(name, 30_000)))!;
    await expect(group.hold(name, ask(600, { askedWaitMs: 0 }), NEVER)).rejects.toMatchObject({
      kind: 'timeout',
      message: `lock "${name}" was not acquired within 0 ms`,
    });
    const cancel = new AbortController();
    const waiting = group.hold(name, ask(600, { params: { ...ask(600).params, waitMs: 10_000 }, askedWaitMs: 10_000 }), cancel.signal);
    await waitFor('queued', async () => (await b.engine.inspect(name)).waiters === 1);
    cancel.abort();
    expect(await waiting).toBeNull();
    await b.engine.release(name, taken.token);
    expect(await free(name)).toBe(true); // nothing was left held for the cancelled hold
    expect(group.size).toBe(0);
  });

  it('end rules: the holder word gives back now, a passed deadline after the drift wait, anything else keeps each lease to its end', async () => {
    const [now, later, kept] = [uniqueName('end'), uniqueName('end'), uniqueName('end')];
    const ending = [recorded(), recorded(), recorded()];
    await ending[0].group.hold(now, ask(30_000), NEVER);
    await ending[1].group.hold(later, ask(30_000), NEVER);
    await ending[2].group.hold(kept, ask(1500), NEVER);

    expect(ending[0].group.end({ byHolder: true }).rule).toBe('given_back');
    await waitFor('given back now', () => free(now), 1000);

    // A call whose deadline came 10 000 s after its request: the wait is 2 x (5 ms + 1 s).
    expect(deadlineEndWaitMs(10_000_000)).toBe(2010);
    expect(ending[1].group.end({ byHolder: false, deadlineCallMs: 10_000_000 }).rule).toBe('after_deadline');
    expect((await b.engine.inspect(later)).holders.map((h) => h.holdCount)).toEqual([1]); // still held, for the wait
    await waitFor('given back after the drift wait', () => free(later), 5000);

    const { rule, members } = ending[2].group.end({ byHolder: false });
    expect([rule, members.map((m) => m.name)]).toEqual(['kept', [kept]]);
    await waitFor('abandoned', async () => (await b.engine.inspect(kept)).holders[0]?.holdCount === 0);
    expect(await free(kept)).toBe(false); // the control: its lease still runs
    await waitFor('free once its lease ran out', () => free(kept), 5000);
    expect(ending.every((e) => e.losses.length === 0)).toBe(true);
  });

  it('an open group: sets join and leave; a dropped set is given back at once, a lost one leaves alone', async () => {
    const { group, reports, losses } = recorded();
    const [one, two] = [uniqueName('open'), uniqueName('open')];
    const pair = [uniqueName('open'), uniqueName('open')];
    const first = (await group.hold(one, ask(600, { tag: 'op-1' }), NEVER))!;
    await group.hold(two, ask(600, { tag: 'op-2' }), NEVER);
    const set = (await group.holdSet(pair, ask(600, { tag: 'op-3' }), NEVER))!;
    expect(group.size).toBe(4);
    await group.drop(first.set);
    expect(group.size).toBe(3);
    expect(await free(one)).toBe(true);
    await deleteLockState(redis, set.grants[0].name);
    await waitFor('the set lost', () => losses.length === 1);
    expect(losses[0]).toMatchObject({ set: { tag: 'op-3' }, member: { name: set.grants[0].name } });
    expect(group.size).toBe(1);
    const count = reports.length;
    await waitFor('a report of the member left', () => reports.slice(count).some((r) => r.members === 1));
    expect(await free(two)).toBe(false);
    group.end({ byHolder: true });
    await waitFor('the last member given back', () => free(two));
  });

  it('max hold: no lease outlives it, and the hold ends as max_hold', async () => {
    const { group, losses } = recorded();
    const name = uniqueName();
    const held = (await group.hold(name, ask(5000, { maxHoldMs: 800 }), NEVER))!;
    expect(held.grants[0].grant.ttlMs).toBe(800);
    await waitFor('max hold', () => losses.length === 1, 5000);
    expect(losses[0]).toMatchObject({ reason: 'max_hold', message: expect.stringContaining('800 ms') });
  });

  it('waits out the drift the SDKs allow (clients/conformance/lease-deadline.json)', () => {
    const table = JSON.parse(readFileSync(join(__dirname, '..', '..', 'clients', 'conformance', 'lease-deadline.json'), 'utf8'));
    expect(CLOCK_DRIFT).toEqual(table.drift);
    for (const { countedMs, marginMs } of table.driftMargin) expect(driftMarginMs(countedMs)).toBeCloseTo(marginMs, 6);
  });
});
