// The earliest confirmed lease end over a lease group's members, from a wheel of lease ends in
// time-slots.ts's slots rather than a walk over every member: a renewal appends its member's new end to
// its slot, and an entry its member has moved past, or left, goes stale and is dropped when its
// slot comes to the front. With 10 000 locks on one session a walk per tick cost more than the
// renewals it reported, and a binary heap of entry objects (the version before this one) spent
// most of its time chasing entries through memory (bench:session-hold's profile).

import { addToSlot, type Slot, slotOf } from './time-slots';

/** A lease as far as its end goes: it ends no earlier than start + leftMs (performance.now()). */
export interface Ending {
  readonly start: number;
  readonly leftMs: number;
}

/** Empty slot indexes stepped over before the wheel reads its keys for the next one instead. */
const STEPS_BEFORE_SCAN = 64;

export class EarliestEnd<T extends Ending> {
  private readonly slots = new Map<number, Slot<T>>();
  /** No entry lies in a slot below this one. */
  private lowest = Number.POSITIVE_INFINITY;
  private entries = 0;

  /** `item`'s end is new (joined, or renewed): any entry of its older end goes stale. */
  push(item: T): void {
    // A slot's value is the end the item was pushed with (ends within one slot are compared exactly).
    const at = item.start + item.leftMs;
    const index = slotOf(at);
    addToSlot(this.slots, index, item, at);
    if (index < this.lowest) this.lowest = index;
    this.entries++;
  }

  /** The item that ends first among those `current` still counts; stale entries on the way are dropped. */
  earliest(current: (item: T) => boolean): T | undefined {
    while (this.slots.size > 0) {
      const slot = this.slots.get(this.lowest);
      if (!slot) {
        this.lowest = this.nextIndex();
        continue;
      }
      // Keep the slot's current entries (in place), and find the earliest among them.
      const { items, values: ats } = slot;
      let best: T | undefined;
      let bestAt = Number.POSITIVE_INFINITY;
      let kept = 0;
      for (let i = 0; i < items.length; i++) {
        const item = items[i];
        const at = ats[i];
        if (!current(item) || item.start + item.leftMs !== at) continue;
        items[kept] = item;
        ats[kept] = at;
        kept++;
        if (at < bestAt) {
          bestAt = at;
          best = item;
        }
      }
      this.entries -= items.length - kept;
      items.length = kept;
      ats.length = kept;
      if (best) return best;
      this.slots.delete(this.lowest);
    }
    this.lowest = Number.POSITIVE_INFINITY;
    return undefined;
  }

  clear(): void {
    this.slots.clear();
    this.lowest = Number.POSITIVE_INFINITY;
    this.entries = 0;
  }

  /** Entries held, stale ones included (tests: it must not grow with renewals). */
  get size(): number {
    return this.entries;
  }

  /** The lowest slot index held: a few steps up from the last, or the least of the map's keys. */
  private nextIndex(): number {
    for (let index = this.lowest + 1, steps = 0; steps < STEPS_BEFORE_SCAN; index++, steps++) {
      if (this.slots.has(index)) return index;
    }
    let least = Number.POSITIVE_INFINITY;
    for (const index of this.slots.keys()) if (index < least) least = index;
    return least;
  }
}
