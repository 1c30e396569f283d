// When each kept lease next needs its renewal loop, for the loops that serve many leases from one
// timer (engine/watchdog.ts): a tick takes only the leases that are due, from a
// min-heap, instead of walking every lease. With 10 000 Holds, walking them all at each tick was
// a third of the server's CPU. Setting an item again leaves its older entry in the heap, stale:
// it is skipped when it comes up. Which entry is current is counted on the item itself (its
// dueVersion), not in a side table: a WeakMap lookup and update per setting was a twentieth of
// the watchdog's time at 10 000 leases, and its entries cost the garbage collector more.
import { Heap } from 'heap-js';

/** An item the schedule can hold: the schedule alone writes dueVersion (start it at 0). */
export interface Schedulable {
  dueVersion: number;
}

interface Entry<T> {
  at: number;
  item: T;
  version: number;
}

export class DueSchedule<T extends Schedulable> {
  private readonly heap = new Heap<Entry<T>>((a, b) => a.at - b.at);

  /** `item` is next due at `at` (performance.now()); any earlier setting no longer counts. */
  set(item: T, at: number): void {
    this.heap.push({ at, item, version: ++item.dueVersion });
  }

  /** `item` is due no more (its entries go stale). */
  delete(item: T): void {
    item.dueVersion++;
  }

  /** The items whose time has come by `now`, each once; each must be set again to come up again. */
  takeDue(now: number): T[] {
    const due: T[] = [];
    for (let next = this.heap.peek(); next && next.at <= now; next = this.heap.peek()) {
      this.heap.pop();
      if (next.item.dueVersion === next.version) {
        next.item.dueVersion++;
        due.push(next.item);
      }
    }
    return due;
  }

  clear(): void {
    this.heap.clear();
  }
}
