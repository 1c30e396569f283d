// Kleppmann's scenario ("How to do distributed locking", 2016), end to end, for each fence store:
// holder A (a child process with the TS SDK) writes, is paused (SIGSTOP) past its lease, holder B
// is granted the lock by a real holdfast server and writes through the guard; A resumes and writes
// with its old token. The guard refuses A (409, reported to A and to the service), B's update is
// not lost, and B is never refused. Negative control: the same run without the guard loses B's update.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FenceStore } from '../../clients/ts/fencing';
import { startStorageService, type StorageService } from '../../examples/fenced-storage/service';
import { startJsonLineChild, type JsonLineChild } from '../support/child';
import { uniqueName } from '../support/redis';
import { startFenceHoldfast } from '../fencing/backends';
import { openStore, STORE_KINDS, type OpenStore } from '../fencing/stores';

const TTL_MS = 3000;

let holdfast: Awaited<ReturnType<typeof startFenceHoldfast>>;
beforeAll(async () => {
  holdfast = await startFenceHoldfast();
});
afterAll(() => holdfast?.stop());

const wrote = (value: string) => (line: Record<string, unknown>) => line.event === 'wrote' && line.value === value;

interface Outcome {
  service: StorageService;
  a: JsonLineChild;
  b: JsonLineChild;
  aToken: bigint;
  bToken: bigint;
  staleWrite: Record<string, unknown>;
  docAfterStaleWrite: string | undefined;
}

async function kleppmann(store: FenceStore | null): Promise<Outcome> {
  const service = await startStorageService(store);
  const lock = uniqueName('kleppmann');
  const start = (label: string) => startJsonLineChild('../fencing/holder-child.js', [holdfast.server.addr, lock, String(TTL_MS), service.url, label]);
  const a = start('a');
  let b: JsonLineChild | undefined;
  try {
    const aToken = BigInt((await a.next((l) => l.event === 'acquired')).token as string);
    expect(await a.next(wrote('a-1'))).toMatchObject({ status: 200 });
    a.child.kill('SIGSTOP'); // A's "GC pause": no renewals; its lease runs out while it sleeps
    b = start('b');
    const bToken = BigInt((await b.next((l) => l.event === 'acquired')).token as string); // granted once A's lease ended
    expect(await b.next(wrote('b-1'))).toMatchObject({ status: 200 });
    a.child.kill('SIGCONT');
    a.child.kill('SIGUSR2'); // A wakes and writes at once, still believing it holds the lock
    const staleWrite = await a.next(wrote('a-2'));
    const docAfterStaleWrite = service.doc();
    b.child.kill('SIGUSR2'); // and B, the current holder, goes on writing
    expect(await b.next(wrote('b-2'))).toMatchObject({ status: 200 });
    return { service, a, b, aToken, bToken, staleWrite, docAfterStaleWrite };
  } finally {
    for (const child of [a, b]) {
      child?.child.kill('SIGCONT');
      child?.child.kill('SIGKILL');
      await child?.exited;
    }
    await service.close();
  }
}

describe.each(STORE_KINDS)('with the guard on the %s store', (kind) => {
  let open: OpenStore;
  beforeAll(async () => {
    open = await openStore(kind);
  }, 60_000);
  afterAll(() => open?.stop());

  it('refuses the paused holder and reports it; no lost update; the current holder is never refused', async () => {
    const run = await kleppmann(open.store);
    expect(run.bToken).toBeGreaterThan(run.aToken);
    // Refused and reported, to the stale holder (409 naming the lock and both tokens) and to the service.
    expect(run.staleWrite.status).toBe(409);
    expect(run.staleWrite.body).toMatchObject({ error: 'stale_fencing_token', token: String(run.aToken), newest: String(run.bToken) });
    expect(run.service.refusals).toEqual([expect.objectContaining({ token: run.aToken, newest: run.bToken })]);
    // No lost update: B's write stood through A's attempt; the applied writes never go back to A.
    expect(run.docAfterStaleWrite).toBe('b-1');
    expect(run.service.writes.map((w) => w.value)).toEqual(['a-1', 'b-1', 'b-2']);
    // Zero false refusals: every write of a holder that held the lock was applied.
    const answers = [...run.a.lines, ...run.b.lines].filter((l) => l.event === 'wrote');
    expect(answers.filter((l) => l.status !== 200).map((l) => l.value)).toEqual(['a-2']);
  }, 60_000);
});

describe('negative control: the same run without the guard', () => {
  it("loses B's update: the paused holder overwrites it", async () => {
    const run = await kleppmann(null);
    expect(run.staleWrite.status).toBe(200);
    expect(run.docAfterStaleWrite).toBe('a-2');
    expect(run.service.writes.map((w) => w.value)).toEqual(['a-1', 'b-1', 'a-2', 'b-2']);
  }, 60_000);
});
