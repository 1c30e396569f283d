// The short chaos run (npm run chaos is the long one): the default configuration under one fault
// of each process kind holdfast claims safety for must show no violation, and the negative
// control (--release-on-disconnect, careless clients) must show some. Both run at once, about a
// minute; the report is in the failure message.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './paths';
import { defaultRun, negativeControl, SHORT_FAULTS } from './profiles';
import { grantsOver, section } from './report';
import { runChaos, type ChaosResult } from './run';
import { claimedSafe } from './tally';

const SEED = 1;
let positive: ChaosResult;
let negative: ChaosResult;

describe('chaos, short run', () => {
  beforeAll(async () => {
    // The worker and storage processes run from test/chaos/dist (dist/ itself is built by globalSetup).
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'test', 'chaos', 'tsconfig.json')], {
      stdio: 'inherit',
    });
    [positive, negative] = await Promise.all([
      runChaos(defaultRun(40, SEED, { faults: SHORT_FAULTS, workers: 6, ttlMs: 1000, everyFaultOnce: true })),
      runChaos(negativeControl(25, SEED, { workers: 4 })),
    ]);
  }, 240_000);

  it('keeps every guarantee under the faults holdfast claims safety for', () => {
    const report = section(positive, 'Default configuration (short run)');
    const t = claimedSafe(positive);
    expect(positive.faults.map((f) => f.cls).sort(), report).toEqual([...SHORT_FAULTS].sort());
    expect(t.grants, report).toBeGreaterThan(100);
    // Both of the SDK's transports among the workloads: Session streams (the default) and a call each.
    expect(grantsOver(positive, 'session'), report).toBeGreaterThan(20);
    expect(grantsOver(positive, 'unary'), report).toBeGreaterThan(20);
    expect(
      {
        unfencedOverlaps: t.unfenced,
        overlaps: t.unfenced + t.fenced + t.quiet,
        semaphoreOverLimit: t.overLimit,
        heldAfterConflictingGrant: t.heldAfter,
        tokenRegressions: t.regressions,
        lostAppends: t.lost,
        duplicatedAppends: t.duplicated,
        outOfOrderAppends: t.outOfOrder,
        hungWaits: t.hung,
        leftoverLocks: t.leftover,
        crashedWorkers: positive.crashed.length,
      },
      report,
    ).toEqual({
      unfencedOverlaps: 0,
      overlaps: 0,
      semaphoreOverLimit: 0,
      heldAfterConflictingGrant: 0,
      tokenRegressions: 0,
      lostAppends: 0,
      duplicatedAppends: 0,
      outOfOrderAppends: 0,
      hungWaits: 0,
      leftoverLocks: 0,
      crashedWorkers: 0,
    });
  });

  it('catches the broken configuration (negative control)', () => {
    const report = section(negative, 'Negative control (short run)');
    const t = claimedSafe(negative, true);
    // --release-on-disconnect frees a paused, cut-off holder's lock while its SDK still counts on it.
    expect(t.heldAfter, report).toBeGreaterThan(0);
    // A careless client's late write drops what its successors appended.
    expect(t.lost + t.outOfOrder + t.unfenced, report).toBeGreaterThan(0);
  });

  it('reads every process on one monotonic clock', () => {
    for (const result of [positive, negative]) {
      expect(result.clock.filter((s) => !(s.before <= s.reading && s.reading <= s.after))).toEqual([]);
    }
  });
});
