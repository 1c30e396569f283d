// The slots both timing wheels keep (due-schedule.ts, earliest-end.ts): entries grouped by the
// SLOT_MS slot of their time, each an item with a number of its own (the version it was set at,
// or the end it was pushed with), in two arrays rather than an object per entry.

/** Slot width (ms): finer than the watchdog's shortest tick (5 ms), so a tick takes nothing late. */
export const SLOT_MS = 4;

export interface Slot<T> {
  items: T[];
  values: number[];
}

export function slotOf(at: number): number {
  return Math.floor(at / SLOT_MS);
}

export function addToSlot<T>(slots: Map<number, Slot<T>>, index: number, item: T, value: number): void {
  const slot = slots.get(index);
  if (slot) {
    slot.items.push(item);
    slot.values.push(value);
  } else {
    slots.set(index, { items: [item], values: [value] });
  }
}

/** Entries held over all slots, stale ones included (tests). */
export function entriesIn<T>(slots: Map<number, Slot<T>>): number {
  let entries = 0;
  for (const slot of slots.values()) entries += slot.items.length;
  return entries;
}
