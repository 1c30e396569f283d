// When each kept lease next needs its renewal loop, for the loops that serve many leases from one
// timer (engine/watchdog.ts): a tick takes only the leases that are due instead of walking every
// lease. The schedule is a timing wheel of time-slots.ts's slots, not a heap: setting an item is an
// append to its slot's arrays, and a tick reads the slots it has passed. A binary heap of entry
// objects cost a quarter of the server's CPU at 10 000 leases (its comparisons chase entries
// spread over the heap; bench:session-hold) and an object per setting for the garbage collector.
// Setting an item again leaves its older entry stale: it is skipped when its slot comes up. Which
// entry is current is counted on the item itself (its dueVersion), not in a side table.

import { addToSlot, entriesIn, type Slot, slotOf } from './time-slots';

/** An item the schedule can hold: the schedule alone writes dueVersion and dueAt (start them at 0). */
export interface Schedulable {
  dueVersion: number;
  dueAt: number;
}

export class DueSchedule<T extends Schedulable> {
  private readonly slots = new Map<number, Slot<T>>();
  /** The first slot not yet wholly taken: settings in the past go there. */
  private firstOpen = -Infinity;

  /** `item` is next due at `at` (performance.now()); any earlier setting no longer counts. Infinity: never. */
  set(item: T, at: number): void {
    const version = ++item.dueVersion;
    item.dueAt = at;
    if (at === Number.POSITIVE_INFINITY) return;
    // A slot's value is the version the item was set at.
    addToSlot(this.slots, Math.max(slotOf(at), this.firstOpen), item, version);
  }

  /** `item` is due no more (its entries go stale). */
  delete(item: T): void {
    item.dueVersion++;
  }

  /** The items whose time has come by `now`, each once, earlier slots first; each must be set again to come up again. */
  takeDue(now: number): T[] {
    const due: T[] = [];
    const nowIndex = slotOf(now);
    for (const index of this.passedSlots(nowIndex)) {
      const slot = this.slots.get(index) as Slot<T>;
      this.slots.delete(index);
      const { items, values: versions } = slot;
      for (let i = 0; i < items.length; i++) {
        const item = items[i];
        if (item.dueVersion !== versions[i]) continue; // set again, or deleted, since
        if (item.dueAt <= now) {
          item.dueVersion++;
          due.push(item);
        } else {
          this.set(item, item.dueAt); // later in the slot now is in: back into it
        }
      }
    }
    this.firstOpen = nowIndex;
    return due;
  }

  clear(): void {
    this.slots.clear();
  }

  /** Entries held, stale ones included (tests). */
  get size(): number {
    return entriesIn(this.slots);
  }

  /** The indexes of the slots up to and including `nowIndex`, in order. */
  private passedSlots(nowIndex: number): number[] {
    // A short gap since the last take: step through its indexes (no slot lies before firstOpen).
    if (nowIndex - this.firstOpen <= this.slots.size) {
      const passed: number[] = [];
      for (let index = this.firstOpen; index <= nowIndex; index++) if (this.slots.has(index)) passed.push(index);
      return passed;
    }
    // A long gap, or the first take: the map's own keys rather than every index in between.
    const passed: number[] = [];
    for (const index of this.slots.keys()) if (index <= nowIndex) passed.push(index);
    return passed.sort((a, b) => a - b);
  }
}
