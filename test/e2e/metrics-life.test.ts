// Metrics that tell the truth: every RPC of lock.proto driven through its normal life (granted,
// released, cancelled by the client, timed out by its deadline, refused on a try-once) against a
// real server (on its embedded Redis) over a real gRPC channel, and after each step exactly the
// counters that describe it have moved, read from the server's --http-listen /metrics. A healthy
// release must not look like an error (ABORTED) or a lease expiry to an alert.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient } from '../../clients/ts/index';
import { LockServiceClient, type AcquireResponse } from '../../gen/holdfast/v1/lock';
import { credentials } from '@grpc/grpc-js';
import { freePort } from '../../src/redis/embedded';
import {
  GRANTS,
  HANDOFFS,
  acquired,
  expirySeenBy,
  moved,
  overshot,
  readCounters,
  releasedBy,
  rpc,
  scrapeSamples,
  waited,
  type Counters,
} from '../support/counters';
import { rawCalls, type RawCalls } from '../support/raw-calls';
import { uniqueName } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

/** A waiting call gives up this long before its deadline, so its answer arrives well in time on a busy machine. */
const MARGIN_MS = 1000;
const DEADLINE_MS = 2500;
const LONG_WAIT = '60000';

let dir: string;
let server: ServerProcess;
let base: string;
let grpc: LockServiceClient;
let call: RawCalls;

/** The one place this file starts a holdfast server: on its own embedded Redis (a fresh data dir). */
async function startServer(): Promise<ServerProcess> {
  dir = mkdtempSync(join(tmpdir(), 'holdfast-metrics-life-'));
  const httpPort = await freePort();
  base = `http://127.0.0.1:${httpPort}`;
  return startServerProcess(undefined, ['--data-dir', dir, '--http-listen', `127.0.0.1:${httpPort}`, '--deadline-margin-ms', String(MARGIN_MS)]);
}

beforeAll(async () => {
  server = await startServer();
  grpc = new LockServiceClient(server.addr, credentials.createInsecure());
  call = rawCalls(grpc);
}, 60_000);
afterAll(async () => {
  grpc?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

let last: Counters;

/**
 * Runs `run`, then waits until the counters moved by exactly `expected` since the last step
 * (plus what `run` returns: the calls it made to wait for a state). Fails at once when a
 * counter moved that should not have, or moved too far.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: most steps are `async () => { ... }` returning nothing, which only `void` admits
async function step(what: string, expected: Record<string, number>, run: () => Promise<Record<string, number> | void>): Promise<void> {
  const extra = (await run()) ?? {};
  const want = { ...expected };
  for (const [series, by] of Object.entries(extra)) want[series] = (want[series] ?? 0) + by;
  let now: Record<string, number> = {};
  let counters = last;
  await waitFor(`the counters of "${what}"`, async () => {
    counters = await readCounters(base);
    now = moved(last, counters);
    return overshot(now, want) || sameMoves(now, want);
  }).catch(() => {});
  expect(now, what).toEqual(want);
  last = counters;
}

function sameMoves(a: Record<string, number>, b: Record<string, number>): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((k) => (a[k] ?? 0) === (b[k] ?? 0));
}

/** Waits, by the waiters gauge (a scrape moves no counter), until `count` calls are queued on this server. */
async function queued(count: number): Promise<void> {
  await waitFor(`${count} queued`, async () => (await scrapeSamples(base)).get('holdfast_waiters') === count);
}

/** A try-once Acquire by someone else, held until the test releases it. */
async function blocker(name: string) {
  const grant = (await call.acquire({ name, owner: 'other', ttlMs: '30000' }).ended).response!;
  expect(grant.acquired).toBe(true);
  return grant;
}

/** Starts a call that queues, cancels it once it waits, and waits until it has left the queue. */
async function cancelWhileQueued(start: () => { cancel(): void; ended: Promise<{ code: number }> }): Promise<void> {
  const waiting = start();
  await queued(1);
  waiting.cancel();
  expect((await waiting.ended).code).toBe(1); // CANCELLED
  await queued(0);
}

type Start = (waitTimeoutMs: string, deadlineMs?: number) => { cancel(): void; ended: Promise<{ code: number; response?: unknown }> };

/**
 * The three ways a call that cannot be granted ends, each a step: refused on a try-once, cancelled
 * by its client while it waits, timed out by its deadline while it waits. `refusedCode` is the
 * status of the first and the last: OK (acquired=false) for the unary calls, DEADLINE_EXCEEDED
 * for the streams.
 */
async function notGranted(method: string, refusedCode: 'OK' | 'DEADLINE_EXCEEDED', start: Start): Promise<void> {
  const refused = async (ended: Promise<{ code: number; response?: unknown }>) => {
    const { code, response } = await ended;
    expect(code).toBe(refusedCode === 'OK' ? 0 : 4);
    expect((response as { acquired?: boolean } | undefined)?.acquired ?? false).toBe(false);
  };
  await step(`${method} refused on a try-once`, { [rpc(method, refusedCode)]: 1, [acquired('not_granted')]: 1 }, () => refused(start('0').ended));
  await step(`${method} cancelled by its client while it waits`, { [rpc(method, 'CANCELLED')]: 1, ...NOT_GRANTED_AFTER_WAITING }, () =>
    cancelWhileQueued(() => start(LONG_WAIT)),
  );
  await step(`${method} timed out by its deadline while it waits`, { [rpc(method, refusedCode)]: 1, ...NOT_GRANTED_AFTER_WAITING }, () =>
    refused(start(LONG_WAIT, DEADLINE_MS).ended),
  );
}

const ACQUIRED = { [GRANTS]: 1, [acquired('granted')]: 1 };
const NOT_GRANTED_AFTER_WAITING = { [acquired('not_granted')]: 1, [waited('not_granted')]: 1 };

describe('metrics through the normal life of every RPC', () => {
  it('Acquire, Renew, SetValue, CheckFencingToken, Inspect, Release', async () => {
    last = await readCounters(base);
    const name = uniqueName('life-acquire');
    let first!: { token: string; fencingToken: string };
    await step('Acquire granted at once', { [rpc('Acquire', 'OK')]: 1, ...ACQUIRED }, async () => {
      first = (await call.acquire({ name, owner: 'a', ttlMs: '30000' }).ended).response!;
    });
    await step('Renew', { [rpc('Renew', 'OK')]: 1 }, async () => {
      expect((await call.renew({ name, token: first.token, ttlMs: '0' }).ended).code).toBe(0);
    });
    await step('SetValue', { [rpc('SetValue', 'OK')]: 1 }, async () => {
      expect((await call.setValue({ name, token: first.token, value: '10.0.0.7:8080' }).ended).code).toBe(0);
    });
    await step('CheckFencingToken', { [rpc('CheckFencingToken', 'OK')]: 1 }, async () => {
      expect((await call.checkFencingToken({ name, fencingToken: first.fencingToken }).ended).response!.live).toBe(true);
    });
    await step('Inspect', { [rpc('Inspect', 'OK')]: 1 }, async () => {
      expect((await call.inspect({ name }).ended).response!.holders).toHaveLength(1);
    });
    await notGranted('Acquire', 'OK', (wait, deadlineMs) => call.acquire({ name, owner: 'b', waitTimeoutMs: wait }, deadlineMs));
    let second!: AcquireResponse;
    await step(
      'Release hands the lock to the waiting Acquire',
      { [rpc('Release', 'OK')]: 1, [releasedBy('holder')]: 1, [rpc('Acquire', 'OK')]: 1, ...ACQUIRED, [waited('granted')]: 1, [HANDOFFS]: 1 },
      async () => {
        const waiting = call.acquire({ name, owner: 'b', waitTimeoutMs: LONG_WAIT });
        await queued(1);
        expect((await call.release({ name, token: first.token }).ended).code).toBe(0);
        second = (await waiting.ended).response!;
        expect(second.acquired).toBe(true);
      },
    );
    await step('Release', { [rpc('Release', 'OK')]: 1, [releasedBy('holder')]: 1 }, async () => {
      expect((await call.release({ name, token: second.token }).ended).code).toBe(0);
    });
    // The control: a lease that really ran out is counted as one, by the call that found it gone.
    await step(
      'Release after the lease ran out',
      { [rpc('Acquire', 'OK')]: 1, ...ACQUIRED, [rpc('Release', 'NOT_FOUND')]: 1, [expirySeenBy('release')]: 1 },
      async () => {
        const short = (await call.acquire({ name, owner: 'c', ttlMs: '200' }).ended).response!;
        let inspects = 0;
        await waitFor('the lease to run out', async () => (++inspects, (await call.inspect({ name }).ended).response!.holders.length === 0));
        expect((await call.release({ name, token: short.token }).ended).code).toBe(5);
        return { [rpc('Inspect', 'OK')]: inspects };
      },
    );
  });

  it('Hold and Watch', async () => {
    last = await readCounters(base);
    const name = uniqueName('life-hold');
    const watch = call.watch({ name });
    await step('Watch opened', {}, async () => void (await watch.next(() => true)));
    const hold = call.hold({ name, owner: 'a', ttlMs: '30000' });
    let grant!: { token: string; holdId: string };
    await step('Hold granted', ACQUIRED, async () => {
      grant = (await hold.next((e) => !!e.acquired)).acquired!;
    });
    await step('SetValue on the Hold', { [rpc('SetValue', 'OK')]: 1 }, async () => {
      expect((await call.setValue({ name, token: grant.token, value: 'leader at 10.0.0.7:8080' }).ended).code).toBe(0);
    });
    await step('Hold released with its token', { [rpc('Release', 'OK')]: 1, [rpc('Hold', 'OK')]: 1, [releasedBy('holder')]: 1 }, async () => {
      expect((await call.release({ name, token: grant.token, holdId: grant.holdId }).ended).code).toBe(0);
      expect((await hold.ended).code).toBe(0);
    });
    const cancelled = call.hold({ name, owner: 'a', ttlMs: '30000' });
    await step('Hold granted again', ACQUIRED, async () => void (await cancelled.next((e) => !!e.acquired)));
    await step('Hold cancelled by its client', { [rpc('Hold', 'CANCELLED')]: 1, [releasedBy('holder')]: 1 }, async () => {
      cancelled.cancel();
      expect((await cancelled.ended).code).toBe(1);
    });
    const other = await blocker(name);
    last = await readCounters(base);
    await notGranted('Hold', 'DEADLINE_EXCEEDED', (wait, deadlineMs) => call.hold({ name, owner: 'b', waitTimeoutMs: wait }, deadlineMs));
    await step('Watch cancelled by its client', { [rpc('Release', 'OK')]: 1, [releasedBy('holder')]: 1, [rpc('Watch', 'CANCELLED')]: 1 }, async () => {
      expect((await call.release({ name, token: other.token }).ended).code).toBe(0);
      watch.cancel();
      expect((await watch.ended).code).toBe(1);
    });
  });

  it('AcquireSet, ReleaseSet and HoldSet', async () => {
    last = await readCounters(base);
    const prefix = uniqueName('life-set');
    const names = [`${prefix}/a`, `${prefix}/b`]; // canonical order: a first
    const members = (list: { name: string; token: string; holdId: string }[]) => list.map(({ name, token, holdId }) => ({ name, token, holdId }));
    let set!: { name: string; token: string; holdId: string }[];
    await step('AcquireSet granted at once', { [rpc('AcquireSet', 'OK')]: 1, [GRANTS]: 2, [acquired('granted')]: 2 }, async () => {
      set = (await call.acquireSet({ names, owner: 'a', ttlMs: '30000' }).ended).response!.members;
    });
    await step('ReleaseSet', { [rpc('ReleaseSet', 'OK')]: 1, [releasedBy('holder')]: 2 }, async () => {
      expect((await call.releaseSet({ members: members(set) }).ended).response!.notHeld).toEqual([]);
    });
    const holdSet = call.holdSet({ names, owner: 'a', ttlMs: '30000' });
    await step('HoldSet granted', { [GRANTS]: 2, [acquired('granted')]: 2 }, async () => {
      set = (await holdSet.next((e) => !!e.acquired)).acquired!.members;
    });
    // The holder's own word: a normal end (OK), not a lost set (ABORTED), and no lease ran out.
    let ended = -1;
    await step('HoldSet released with ReleaseSet', { [rpc('ReleaseSet', 'OK')]: 1, [rpc('HoldSet', 'OK')]: 1, [releasedBy('holder')]: 2 }, async () => {
      expect((await call.releaseSet({ members: members(set) }).ended).response!.notHeld).toEqual([]);
      ended = (await holdSet.ended).code;
    });
    expect(ended).toBe(0);
    const cancelled = call.holdSet({ names, owner: 'a', ttlMs: '30000' });
    await step('HoldSet granted again', { [GRANTS]: 2, [acquired('granted')]: 2 }, async () => void (await cancelled.next((e) => !!e.acquired)));
    await step('HoldSet cancelled by its client', { [rpc('HoldSet', 'CANCELLED')]: 1, [releasedBy('holder')]: 2 }, async () => {
      cancelled.cancel();
      expect((await cancelled.ended).code).toBe(1);
    });

    const other = await blocker(names[0]);
    last = await readCounters(base);
    await notGranted('AcquireSet', 'OK', (wait, deadlineMs) => call.acquireSet({ names, owner: 'b', waitTimeoutMs: wait }, deadlineMs));
    await notGranted('HoldSet', 'DEADLINE_EXCEEDED', (wait, deadlineMs) => call.holdSet({ names, owner: 'b', waitTimeoutMs: wait }, deadlineMs));
    await step('the blocker released', { [rpc('Release', 'OK')]: 1, [releasedBy('holder')]: 1 }, async () => {
      expect((await call.release({ name: names[0], token: other.token }).ended).code).toBe(0);
    });
    // Nothing late: a call that moves only its own counter, after everything above has settled.
    await step('Inspect after all', { [rpc('Inspect', 'OK')]: 1 }, async () => void (await call.inspect({ name: names[1] }).ended));
  });

  it("the TypeScript SDK's release of a Hold and of a HoldSet is a normal end too", async () => {
    const sdk = new HoldfastClient(server.addr, { transport: 'unary' }); // Hold streams (session-observe.test.ts has the session's)
    try {
      last = await readCounters(base);
      const name = uniqueName('life-sdk');
      const lease = await sdk.hold(name, { ttlMs: 30_000 });
      await step('SDK hold released', { ...ACQUIRED, [rpc('Release', 'OK')]: 1, [rpc('Hold', 'OK')]: 1, [releasedBy('holder')]: 1 }, () => lease.release());
      const set = await sdk.holdSet([`${name}/a`, `${name}/b`], { ttlMs: 30_000 });
      await step(
        'SDK holdSet released',
        { [GRANTS]: 2, [acquired('granted')]: 2, [rpc('ReleaseSet', 'OK')]: 1, [rpc('HoldSet', 'OK')]: 1, [releasedBy('holder')]: 2 },
        () => set.release(),
      );
      expect(set.signal.aborted).toBe(false); // released, not lost
    } finally {
      sdk.close();
    }
  });

  it('the step check fails when a counter moves that the step does not name (the control)', async () => {
    last = await readCounters(base);
    await expect(step('an Inspect said to move nothing', {}, async () => void (await call.inspect({ name: uniqueName() }).ended))).rejects.toThrow(/Inspect/);
    last = await readCounters(base);
  });
});
