// clients/conformance/session-deadline.json against the TypeScript SDK's session lease deadline
// (clients/ts/deadline.ts sessionLeaseDeadline, which every lease held under a session counts by).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLOCK_DRIFT, leaseDeadline, sessionLeaseDeadline, type Anchor } from '../../clients/ts/deadline';

interface Case {
  name: string;
  openedAtMs: number;
  pongs: { sentAtMs: number; receivedAfterMs: number }[];
  renewed: { leaseStartedAfterMs: number; ttlMs: number };
  deadlineMs: number;
}
interface Table {
  precisionMs: number;
  drift: { fixedMs: number; rate: number };
  cases: Case[];
}

const table = JSON.parse(readFileSync(join(__dirname, '..', '..', 'clients', 'conformance', 'session-deadline.json'), 'utf8')) as Table;

type Rule = (anchors: readonly Anchor[], leaseStartedAfterMs: number, ttlMs: number) => number;

/** One line per case whose deadline differs from the table. */
function mismatches(rule: Rule): string[] {
  const found: string[] = [];
  for (const c of table.cases) {
    const anchors = [{ sentAt: c.openedAtMs, receivedAfterMs: 0 }, ...c.pongs.map((p) => ({ sentAt: p.sentAtMs, receivedAfterMs: p.receivedAfterMs }))];
    const got = rule(anchors, c.renewed.leaseStartedAfterMs, c.renewed.ttlMs);
    if (!(Math.abs(got - c.deadlineMs) <= table.precisionMs)) found.push(`${c.name}: ${got}, want ${c.deadlineMs}`);
  }
  return found;
}

describe('session deadline conformance (clients/conformance/session-deadline.json)', () => {
  it('uses the table’s drift allowance', () => {
    expect(CLOCK_DRIFT).toEqual(table.drift);
  });

  it('agrees with every case', () => {
    expect(mismatches(sessionLeaseDeadline)).toEqual([]);
  });

  // Negative controls: a rule wrong in one way must miss at least one case.
  const wrong: [string, Rule][] = [
    ['pongs ignored (counted from the open only)', (anchors, after, ttl) => leaseDeadline(anchors[0].sentAt, after, ttl)],
    [
      'the latest pong always used',
      (anchors, after, ttl) => {
        const a = anchors[anchors.length - 1];
        return leaseDeadline(a.sentAt, after - a.receivedAfterMs, ttl);
      },
    ],
    [
      'a pong received after the lease started still used',
      (anchors, after, ttl) => Math.max(...anchors.map((a) => leaseDeadline(a.sentAt, after - a.receivedAfterMs, ttl))),
    ],
    [
      'drift counted from the open even after a pong',
      (anchors, after, ttl) =>
        Math.max(
          ...anchors
            .filter((a) => a.receivedAfterMs <= after)
            .map((a) => a.sentAt - a.receivedAfterMs + after + ttl - CLOCK_DRIFT.fixedMs - CLOCK_DRIFT.rate * (after + ttl)),
        ),
    ],
  ];
  it.each(wrong)('a rule with %s misses a case', (_what, rule) => {
    expect(mismatches(rule).length).toBeGreaterThan(0);
  });
});
