// A lease group's earliest end (src/engine/earliest-end.ts): the earliest confirmed end over the
// members still counted, never a member counted past its own confirmed end, and no pile-up of
// stale entries however many renewals come. How the group reports it (once per round trip, only
// forward) is tested on a real Redis: test/engine/lease-group.test.ts.
import { describe, expect, it } from 'vitest';
import { EarliestEnd } from '../../src/engine/earliest-end';

interface Member {
  id: string;
  start: number;
  leftMs: number;
  kept: boolean;
}

const member = (id: string, start: number, leftMs: number): Member => ({ id, start, leftMs, kept: true });
const kept = (m: Member) => m.kept;

describe('EarliestEnd', () => {
  it('finds the member that ends first; a renewed member counts by its new end only', () => {
    const ends = new EarliestEnd<Member>();
    const [a, b] = [member('a', 0, 600), member('b', 0, 700)];
    ends.push(a);
    ends.push(b);
    expect(ends.earliest(kept)).toBe(a);
    Object.assign(a, { start: 400, leftMs: 600 }); // a renewed: now ends at 1000
    ends.push(a);
    expect(ends.earliest(kept)).toBe(b);
    b.kept = false; // b left
    expect(ends.earliest(kept)?.start).toBe(400);
    a.kept = false;
    expect(ends.earliest(kept)).toBeUndefined();
    expect(ends.size).toBe(0);
  });

  it('after renewals, stalls and removals the earliest end is the one over the members left, and stale entries do not pile up', () => {
    const ends = new EarliestEnd<Member>();
    const model = new Map<string, Member>();
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    for (let i = 0; i < 1000; i++) {
      const m = member(`h${i}`, 0, 300 + Math.floor(random() * 900)); // ttls of every size in one group
      model.set(m.id, m);
      ends.push(m);
    }
    let pushed = model.size;
    for (let now = 50; now <= 6000; now += 50) {
      for (const m of model.values()) {
        const roll = random();
        if (roll < 0.001 || m.start + m.leftMs <= now) {
          // Released, or lost: a member not renewed by its end leaves.
          m.kept = false;
          model.delete(m.id);
        } else if (now - m.start >= m.leftMs / 3 && roll > 0.1) {
          // Renewed a third of its lease after the last renewal, as the watchdog does; a tenth stall.
          m.start = now;
          ends.push(m);
          pushed++;
        }
      }
      expect(isEarliest(model, ends.earliest(kept))).toBe(true);
      expect(ends.size).toBeLessThanOrEqual(4 * model.size + 1);
    }
    expect(model.size).toBeGreaterThan(500);
    // Negative control of the bound: a heap that kept every entry pushed would be far over it.
    expect(pushed).toBeGreaterThan(5 * (4 * model.size + 1));
    // Negative control: the checker refuses a member that is not the earliest.
    const sorted = [...model.values()].sort((x, y) => x.start + x.leftMs - (y.start + y.leftMs));
    const later = sorted.find((m) => m.start + m.leftMs > sorted[0].start + sorted[0].leftMs);
    expect(isEarliest(model, later)).toBe(false);
    expect(isEarliest(model, sorted[0])).toBe(true);
  });
});

function isEarliest(model: Map<string, Member>, found: Member | undefined): boolean {
  if (!found) return model.size === 0;
  return found.start + found.leftMs === Math.min(...[...model.values()].map((m) => m.start + m.leftMs));
}
