// The deadlock walk's bounds (src/engine/deadlocks.ts, docs/internals.md "Deadlock detection") on
// a real redis-server, through DeadlockDetector and RedisStore, without gRPC or servers: a walk
// stops after maxOwners owners or maxWalkMs and ends nobody then; within its bounds it finds a
// long cycle and ends exactly one wait, the youngest. Each bound has its negative control: the
// same graph walked without the bound is walked to its end.
import { beforeAll, describe, expect, it } from 'vitest';
import { DeadlockDetector, type DeadlockEvent, type DeadlockOptions } from '../../src/engine/deadlocks';
import type { AcquireRequest, LockRef, WaitGraph } from '../../src/engine/store';
import type { RedisStore } from '../../src/redis/store';
import { useRedisStore } from '../support/engine';
import { uniqueName } from '../support/redis';

const PREFIX = 'hf';
/** Long enough that no waiter entry, grant or wait record runs out during a test. */
const LONG_MS = 120_000;
const CHAIN = 20;

const fixture = useRedisStore();
let store: RedisStore;
beforeAll(() => {
  store = fixture.store;
});

const lockRef = (name: string): LockRef => ({ prefix: PREFIX, name });
const ask = (name: string, owner: string, waiterId: string): AcquireRequest => ({
  lock: lockRef(name),
  token: uniqueName('t'),
  owner,
  ttlMs: LONG_MS,
  mode: 1,
  limit: 1,
  requestId: '',
  waiterId,
  entryLeaseMs: LONG_MS,
  holdId: '',
  maxWaiters: 0,
  value: '',
});

interface Chain {
  owners: string[];
  locks: string[];
  /** waiterIds[i]: owner i's wait on lock i (queued in order of i). */
  waiterIds: string[];
}

/**
 * Owner i waits for lock i, held by owner i+1: a chain of `CHAIN` owners whose last waits for
 * nothing. Lock CHAIN-1 is held by owner 0, so closing the chain (close()) is one more wait.
 */
async function chain(): Promise<Chain> {
  const base = uniqueName('walk');
  const owners = Array.from({ length: CHAIN }, (_, i) => `${base}-owner-${i}`);
  const locks = Array.from({ length: CHAIN }, (_, i) => `${base}-lock-${i}`);
  // Zero-padded: waits queued in the same ms are ordered by waiter id as they were queued.
  const waiterIds = Array.from({ length: CHAIN }, (_, i) => `test.${base}-w${String(i).padStart(2, '0')}`);
  for (let i = 0; i < CHAIN; i++) expect((await store.acquire(ask(locks[i], owners[(i + 1) % CHAIN], ''))).outcome).toBe('granted');
  const c = { owners, locks, waiterIds };
  for (let i = 0; i < CHAIN - 1; i++) await queue(c, i);
  return c;
}

/** Owner i queues on lock i and records the wait, as the wait room does at the timeout. */
async function queue(c: Chain, i: number): Promise<void> {
  expect((await store.acquire(ask(c.locks[i], c.owners[i], c.waiterIds[i]))).outcome).toBe('queued');
  await store.noteWait({ prefix: PREFIX, owner: c.owners[i], waiterId: c.waiterIds[i], name: c.locks[i], waitedMs: 0, keepMs: LONG_MS });
}

/** Which of the chain's waits (indexes) no longer wait. */
async function ended(c: Chain, waits = CHAIN): Promise<number[]> {
  const gone: number[] = [];
  for (let i = 0; i < waits; i++) {
    if (!(await store.waitEdge({ lock: lockRef(c.locks[i]), waiterId: c.waiterIds[i], owner: c.owners[i] })).waiting) gone.push(i);
  }
  return gone;
}

/** A detector over `graph` (the store unless wrapped), and the events its walks report. */
function detector(options: Partial<DeadlockOptions>, graph: WaitGraph = store) {
  const events: DeadlockEvent[] = [];
  const d = new DeadlockDetector(graph, PREFIX, LONG_MS, { timeoutMs: 500, ...options, onEvent: (e) => events.push(e) });
  return { walk: (start: string) => d.walk(start), events };
}

/** The store, with each waitsOf call answered `delayMs` late: a walk slower than its time bound. */
function slowGraph(delayMs: number): WaitGraph {
  return {
    noteWait: (r) => store.noteWait(r),
    forgetWait: (r) => store.forgetWait(r),
    waitsOf: async (r) => {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      return store.waitsOf(r);
    },
    waitEdge: (r) => store.waitEdge(r),
    abortWait: (r) => store.abortWait(r),
  };
}

describe('the deadlock walk on a real Redis', () => {
  it(`a chain of ${CHAIN} owners longer than maxOwners 8: the walk gives up and ends nobody; without the bound it walks the chain to its end`, async () => {
    const c = await chain();
    const bounded = detector({ maxOwners: 8 });
    await bounded.walk(c.owners[0]);
    expect(bounded.events).toEqual([{ kind: 'gave_up', owner: c.owners[0], visited: 8, ms: expect.any(Number) }]);
    expect(await ended(c, CHAIN - 1)).toEqual([]);
    // Negative control: the default bound (256 owners) covers the chain; it ends at owner 19,
    // who waits for nothing, with no event at all.
    const unbounded = detector({});
    await unbounded.walk(c.owners[0]);
    expect(unbounded.events).toEqual([]);
    expect(await ended(c, CHAIN - 1)).toEqual([]);
  });

  it(`the chain closed into a cycle of ${CHAIN}: maxOwners 8 gives up; maxOwners 32 finds it and ends exactly one wait, the youngest, though two walks find it`, async () => {
    const c = await chain();
    await queue(c, CHAIN - 1);
    const bounded = detector({ maxOwners: 8 });
    await bounded.walk(c.owners[0]);
    expect(bounded.events.map((e) => e.kind)).toEqual(['gave_up']);
    expect(await ended(c)).toEqual([]);

    // Two walkers (as two servers' waits would) from two owners of the cycle at once.
    const [first, second] = [detector({ maxOwners: 32 }), detector({ maxOwners: 32 })];
    await Promise.all([first.walk(c.owners[0]), second.walk(c.owners[7])]);
    const events = [...first.events, ...second.events];
    const aborted = events.filter((e) => e.kind === 'aborted');
    expect(aborted).toHaveLength(1);
    expect(events.filter((e) => e.kind === 'gave_up')).toEqual([]);
    if (aborted[0].kind !== 'aborted') throw new Error('not an abort');
    expect(aborted[0].cycle).toHaveLength(CHAIN);
    // Owner 19's wait on lock 19 was queued last: it is the one ended.
    expect(aborted[0].victim).toMatchObject({ owner: c.owners[CHAIN - 1], name: c.locks[CHAIN - 1], waiterId: c.waiterIds[CHAIN - 1], holder: c.owners[0] });
    expect(aborted[0].message).toMatch(/^deadlock: /);
    expect(aborted[0].message).toContain(`and ${CHAIN - 8} more edges back to owner "${c.owners[CHAIN - 1]}"`);
    expect(await ended(c)).toEqual([CHAIN - 1]);
    // Its server's claim answers it aborted with the message; owner 0 still holds lock 19.
    const claimed = await store.claim({ lock: lockRef(c.locks[CHAIN - 1]), entryLeaseMs: LONG_MS, waiterIds: [c.waiterIds[CHAIN - 1]] });
    expect(claimed.waiters).toEqual([{ outcome: 'aborted', message: aborted[0].message }]);
    const info = await store.inspect(lockRef(c.locks[CHAIN - 1]));
    expect(info.waiters).toBe(0);
    expect(info.holders.map((h) => h.owner)).toEqual([c.owners[0]]);

    // The cycle is broken: a further walk finds nothing and ends nothing more.
    const after = detector({ maxOwners: 32 });
    await after.walk(c.owners[0]);
    expect(after.events).toEqual([]);
    expect(await ended(c)).toEqual([CHAIN - 1]);
  });

  it('a walk slower than maxWalkMs (each waitsOf answered 60 ms late) gives up and ends nobody; without the bound the same slow walk ends the cycle', async () => {
    const c = await chain();
    await queue(c, CHAIN - 1);
    const bounded = detector({ maxWalkMs: 300 }, slowGraph(60));
    await bounded.walk(c.owners[0]);
    expect(bounded.events).toHaveLength(1);
    const gaveUp = bounded.events[0];
    if (gaveUp.kind !== 'gave_up') throw new Error(`expected gave_up, got ${gaveUp.kind}`);
    expect(gaveUp.owner).toBe(c.owners[0]);
    // It stopped on time, not on owners: it had not been round the cycle.
    expect(gaveUp.ms).toBeGreaterThan(300);
    expect(gaveUp.visited).toBeLessThan(CHAIN);
    expect(await ended(c)).toEqual([]);
    // Negative control: the same slow graph with room for the walk (20 x 60 ms and the reads).
    const unbounded = detector({ maxWalkMs: 60_000 }, slowGraph(60));
    await unbounded.walk(c.owners[0]);
    expect(unbounded.events.map((e) => e.kind)).toEqual(['found', 'aborted']);
    expect(await ended(c)).toEqual([CHAIN - 1]);
  });

  it('200 waits of one owner on one lock: its walks run one at a time (a wait that fires meanwhile asks for one more), each reading the lock once', async () => {
    const base = uniqueName('many');
    const [owner, holder, lock] = [`${base}-owner`, `${base}-holder`, `${base}-lock`];
    const WAITS = 200;
    expect((await store.acquire(ask(lock, holder, ''))).outcome).toBe('granted');
    let walks = 0;
    let edges = 0;
    let sawAll: () => void;
    const allSeen = new Promise<void>((resolve) => (sawAll = resolve));
    const counting: WaitGraph = {
      noteWait: (r) => store.noteWait(r),
      forgetWait: (r) => store.forgetWait(r),
      waitsOf: async (r) => {
        walks++;
        const waits = await store.waitsOf(r);
        if (waits.length === WAITS) sawAll();
        return waits;
      },
      waitEdge: (r) => {
        edges++;
        return store.waitEdge(r);
      },
      abortWait: (r) => store.abortWait(r),
    };
    const d = new DeadlockDetector(counting, PREFIX, LONG_MS, { timeoutMs: 50 });
    const waiterIds = Array.from({ length: WAITS }, (_, i) => `test.${base}-w${i}`);
    for (const waiterId of waiterIds) expect((await store.acquire(ask(lock, owner, waiterId))).outcome).toBe('queued');
    // All started together (a session's burst of waits): their timers fire together.
    const stops = waiterIds.map((waiterId) => d.watch({ name: lock, owner, waiterId, deadline: performance.now() + LONG_MS }));
    // Every wait's timer has fired and recorded it once a walk reads all 200 records.
    await allSeen;
    stops.forEach((stop) => stop());
    // One walk per timer would be 200 walks, and one edge read per record 200 x 200 reads.
    expect(walks).toBeLessThanOrEqual(10);
    expect(edges).toBeLessThanOrEqual(walks);
  });
});
