// The session deadline (src/transport/session-leases.ts): one report per burst of renewals, the
// earliest lease end over every lock, and never a lock counted past its own confirmed end.
import { describe, expect, it } from 'vitest';
import type { KeptLease } from '../../src/engine/types';
import { SessionLeases, type SessionDeadline } from '../../src/transport/session-leases';

const lease: KeptLease = { letGo: async () => {}, abandon: async () => {} };
const held = (holdId: string, start: number, ttlMs: number) => ({ holdId, opId: holdId, name: holdId, lease, start, ttlMs });
const tick = () => new Promise((resolve) => setImmediate(resolve));

function tracked() {
  const reports: SessionDeadline[] = [];
  return { leases: new SessionLeases((d) => reports.push(d)), reports, ends: () => reports.map((r) => r.leaseStart + r.ttlMs) };
}

describe('SessionLeases', () => {
  it('reports one deadline for a burst of renewals: the earliest end over all locks', async () => {
    const { leases, reports } = tracked();
    for (let i = 0; i < 50; i++) leases.add(held(`h${i}`, 0, 600));
    for (let i = 0; i < 50; i++) leases.renewed(`h${i}`, 600, 200 + i);
    await tick();
    expect(reports).toEqual([{ ttlMs: 600, leaseStart: 200, locks: 50 }]);
  });

  it('a lock whose renewal stalls holds the deadline back until it leaves; then the others are reported', async () => {
    const { leases, ends } = tracked();
    leases.add(held('a', 0, 600));
    leases.add(held('b', 0, 600));
    leases.renewed('a', 600, 200);
    leases.renewed('b', 600, 200);
    await tick();
    leases.renewed('a', 600, 400); // b's renewal fails
    await tick();
    expect(ends()).toEqual([800]);
    leases.remove('b');
    await tick();
    expect(ends()).toEqual([800, 1000]);
  });

  it('a lock added later with an earlier end is covered by the next report, even one equal to the last', async () => {
    const { leases, ends } = tracked();
    leases.add(held('long', 0, 1000));
    leases.renewed('long', 1000, 300);
    await tick();
    expect(ends()).toEqual([1300]);
    leases.add(held('short', 500, 300)); // ends at 800: the client counts it from its grant
    leases.renewed('short', 500, 800); // now ends at 1300, as the last report said
    await tick();
    // Without a report the client would hold "short" only until 800.
    expect(ends()).toEqual([1300, 1300]);
  });

  it('after renewals, stalls and removals the deadline is the earliest end over the locks left, and stale entries do not pile up', async () => {
    const { leases, reports } = tracked();
    const model = new Map<string, { ttl: number; renewedAt: number; end: number }>(); // what the test knows of each lock
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    for (let i = 0; i < 1000; i++) {
      const ttl = 300 + Math.floor(random() * 900); // ttls of every size on one session
      leases.add(held(`h${i}`, 0, ttl));
      model.set(`h${i}`, { ttl, renewedAt: 0, end: ttl });
    }
    let pushed = model.size;
    // Until a report, the client counts every lock from its grant.
    const granted: SessionDeadline = { ttlMs: Math.min(...[...model.values()].map((lock) => lock.ttl)), leaseStart: 0, locks: model.size };
    for (let now = 50; now <= 6000; now += 50) {
      for (const [holdId, lock] of model) {
        const roll = random();
        if (roll < 0.001 || lock.end <= now) {
          // Released, or lost: a lock not renewed by its end is reported lost and leaves.
          leases.remove(holdId);
          model.delete(holdId);
        } else if (now - lock.renewedAt >= lock.ttl / 3 && roll > 0.1) {
          // Renewed a third of its ttl after the last renewal, as the watchdog does; a tenth stall.
          leases.renewed(holdId, lock.ttl, now);
          pushed++;
          model.set(holdId, { ttl: lock.ttl, renewedAt: now, end: now + lock.ttl });
        }
      }
      await tick();
      expect(deadlineMatches(model, reports.at(-1) ?? granted)).toBe(true);
      expect(leases.heapSize).toBeLessThanOrEqual(4 * model.size + 1);
    }
    expect(model.size).toBeGreaterThan(500);
    // Negative control of the bound: a heap that kept every entry pushed would be far over it.
    expect(pushed).toBeGreaterThan(5 * (4 * model.size + 1));
    // Negative control: the checker refuses a deadline that is not the earliest end.
    const [first, second] = [...new Set([...model.values()].map((lock) => lock.end))].sort((a, b) => a - b);
    expect(second).toBeGreaterThan(first);
    expect(deadlineMatches(model, { ttlMs: second, leaseStart: 0, locks: model.size })).toBe(false);
    expect(deadlineMatches(model, { ttlMs: first, leaseStart: 0, locks: model.size })).toBe(true);
  });
});

/** The deadline last reported is the earliest end over the model's locks (a report is sent only when it moves). */
function deadlineMatches(model: Map<string, { end: number }>, report: SessionDeadline): boolean {
  return report.leaseStart + report.ttlMs === Math.min(...[...model.values()].map((lock) => lock.end));
}
