// clients/conformance/lease-deadline.json against the TypeScript SDK's lease deadline
// (clients/ts/deadline.ts, which Lease applies to every acquired and renewed event).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLOCK_DRIFT, deadlinePassed, driftMarginMs, laterDeadline, leaseDeadline } from '../../clients/ts/deadline';

interface Step {
  atMs: number;
  event: 'acquired' | 'renewed' | 'look';
  leaseStartedAfterMs?: number;
  ttlMs?: number;
  expect: 'held' | 'lost';
  deadlineMs?: number;
}
interface Table {
  precisionMs: number;
  drift: { fixedMs: number; rate: number };
  driftMargin: { countedMs: number; marginMs: number }[];
  cases: { name: string; sentAtMs: number; steps: Step[] }[];
}

const table = JSON.parse(readFileSync(join(__dirname, '..', '..', 'clients', 'conformance', 'lease-deadline.json'), 'utf8')) as Table;

interface Rule {
  leaseDeadline: typeof leaseDeadline;
  laterDeadline: typeof laterDeadline;
  deadlinePassed: typeof deadlinePassed;
}
const sdk: Rule = { leaseDeadline, laterDeadline, deadlinePassed };

/** Plays every case as Lease does; one line per step whose outcome differs from the table. */
function mismatches(rule: Rule): string[] {
  const found: string[] = [];
  for (const c of table.cases) {
    let kept = -Infinity; // no deadline before the grant
    let lost = false;
    c.steps.forEach((step, i) => {
      if (!lost) {
        if (step.event !== 'look') {
          const confirmed = rule.leaseDeadline(c.sentAtMs, step.leaseStartedAfterMs!, step.ttlMs!);
          kept = rule.laterDeadline(kept, confirmed);
        }
        lost = rule.deadlinePassed(kept, step.atMs);
      }
      const got = lost ? 'lost' : 'held';
      if (got !== step.expect || (!lost && Math.abs(kept - step.deadlineMs!) > table.precisionMs)) {
        found.push(`${c.name}, step ${i + 1}: ${got} (deadline ${kept}), want ${step.expect} ${step.deadlineMs ?? ''}`);
      }
    });
  }
  return found;
}

describe('lease deadline conformance (clients/conformance/lease-deadline.json)', () => {
  it('uses the table’s drift allowance', () => {
    expect(CLOCK_DRIFT).toEqual(table.drift);
    for (const { countedMs, marginMs } of table.driftMargin) {
      expect(Math.abs(driftMarginMs(countedMs) - marginMs), `counted ${countedMs} ms`).toBeLessThanOrEqual(table.precisionMs);
    }
  });

  it('agrees with every case', () => {
    expect(mismatches(sdk)).toEqual([]);
  });

  // Negative controls: a rule wrong in one way must miss at least one case.
  const wrong: [string, Partial<Rule>][] = [
    ['no drift allowance', { leaseDeadline: (sentAt, after, ttl) => sentAt + after + ttl }],
    ['only the fixed 5 ms allowance', { leaseDeadline: (sentAt, after, ttl) => sentAt + after + ttl - 5 }],
    ['the latest confirmation wins, even an earlier deadline', { laterDeadline: (_kept, confirmed) => confirmed }],
    ['a lease still held at its deadline', { deadlinePassed: (deadline, now) => now > deadline }],
  ];
  it.each(wrong)('a rule with %s misses a case', (_what, change) => {
    expect(mismatches({ ...sdk, ...change }).length).toBeGreaterThan(0);
  });
});
