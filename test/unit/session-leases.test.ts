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
});
