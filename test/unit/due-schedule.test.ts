// The renewal loops' schedule (src/engine/due-schedule.ts): a tick gets exactly the items whose
// latest setting has come due, once, and nothing set later or taken out.
import { describe, expect, it } from 'vitest';
import { DueSchedule } from '../../src/engine/due-schedule';

describe('DueSchedule', () => {
  it('gives each due item once, by its latest setting, and none that was taken out', () => {
    const schedule = new DueSchedule<{ name: string; dueVersion: number }>();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((name) => ({ name, dueVersion: 0 }));
    schedule.set(a, 10);
    schedule.set(b, 20);
    schedule.set(c, 5);
    schedule.set(c, 30); // moved later: its entry at 5 is stale
    schedule.set(d, 15);
    schedule.delete(d);
    expect(schedule.takeDue(4)).toEqual([]);
    expect(schedule.takeDue(20)).toEqual([a, b]);
    expect(schedule.takeDue(25)).toEqual([]); // taken once: not again until set again
    schedule.set(a, 22);
    expect(schedule.takeDue(40)).toEqual([a, c]);
    expect(schedule.takeDue(1000)).toEqual([]);
  });

  it('keeps up with many items moved many times (only the latest setting counts)', () => {
    const schedule = new DueSchedule<{ id: number; dueVersion: number }>();
    const items = Array.from({ length: 1000 }, (_, id) => ({ id, dueVersion: 0 }));
    for (let round = 0; round < 5; round++) for (const item of items) schedule.set(item, 100 + round * 100 + item.id);
    expect(schedule.takeDue(499)).toEqual([]);
    expect(schedule.takeDue(2000).map((i) => i.id)).toEqual(items.map((i) => i.id));
  });
});
