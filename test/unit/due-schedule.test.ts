// The renewal loops' schedule (src/engine/due-schedule.ts): a tick gets exactly the items whose
// latest setting has come due, once, and nothing set later or taken out.
import { describe, expect, it } from 'vitest';
import { DueSchedule } from '../../src/engine/due-schedule';

describe('DueSchedule', () => {
  it('gives each due item once, by its latest setting, and none that was taken out', () => {
    const schedule = new DueSchedule<{ name: string; dueVersion: number; dueAt: number }>();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((name) => ({ name, dueVersion: 0, dueAt: 0 }));
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
    const schedule = new DueSchedule<{ id: number; dueVersion: number; dueAt: number }>();
    const items = Array.from({ length: 1000 }, (_, id) => ({ id, dueVersion: 0, dueAt: 0 }));
    for (let round = 0; round < 5; round++) for (const item of items) schedule.set(item, 100 + round * 100 + item.id);
    expect(schedule.takeDue(499)).toEqual([]);
    expect(schedule.takeDue(2000).map((i) => i.id)).toEqual(items.map((i) => i.id));
  });

  it('gives an item set in the past at the next take, never one set for Infinity, and none before its time within a slot', () => {
    type Item = { name: string; dueVersion: number; dueAt: number };
    const schedule = new DueSchedule<Item>();
    const [a, b, c, never] = ['a', 'b', 'c', 'never'].map((name): Item => ({ name, dueVersion: 0, dueAt: 0 }));
    expect(schedule.takeDue(100)).toEqual([]);
    schedule.set(a, 50); // already past
    schedule.set(never, Number.POSITIVE_INFINITY);
    schedule.set(b, 101); // in the slot 100 is in, but later
    expect(schedule.takeDue(100.5)).toEqual([a]);
    expect(schedule.takeDue(101)).toEqual([b]);
    schedule.set(c, 10_000_000); // far ahead: a take after a long gap reads the map, not every slot
    expect(schedule.takeDue(9_999_999)).toEqual([]);
    expect(schedule.takeDue(1e12)).toEqual([c]);
    expect(schedule.size).toBe(0); // taken slots are gone; Infinity made no entry
  });

  it('drops stale entries as their slots pass', () => {
    const schedule = new DueSchedule<{ dueVersion: number; dueAt: number }>();
    const item = { dueVersion: 0, dueAt: 0 };
    for (let at = 10; at < 1010; at += 10) schedule.set(item, at);
    expect(schedule.size).toBe(100);
    expect(schedule.takeDue(500)).toEqual([]); // every entry up to 500 is stale
    expect(schedule.size).toBeLessThanOrEqual(51);
    expect(schedule.takeDue(1000)).toEqual([item]);
    expect(schedule.size).toBe(0);
  });
});
