// What the checker reports: one anomaly per broken rule, put down to the fault active when it
// happened.
import type { LockSpec, StorageDump } from './events';
import type { Fault } from './faults';
import type { Op } from './history';

export type Check =
  | 'overlap'
  | 'over-limit'
  | 'held-after-grant'
  | 'token-regression'
  | 'lost-append'
  | 'duplicate-append'
  | 'out-of-order'
  | 'hung-wait'
  | 'leftover';

/** Whether the storage service kept a conflict out (checker.ts, overlapFencing). */
export type Fencing = 'unfenced' | 'fenced' | 'quiet';

export interface Anomaly {
  check: Check;
  lock: string;
  type: LockSpec['type'];
  /** When it happened (for an overlap: when the later holder learned of its grant). */
  t: number;
  /** The fault class active then, or 'none'. */
  fault: string;
  ops: string[];
  fencing?: Fencing;
  overlapMs?: number;
  detail: string;
}

export interface CheckInput {
  ops: Op[];
  locks: LockSpec[];
  storage: StorageDump;
  faults: Fault[];
  /** Worker processes the run killed on purpose: their unfinished operations are not hangs. */
  killed: Set<string>;
  /** Worker processes that did not finish their operations when asked to stop. */
  stuck: Set<string>;
  /** What Inspect reported for each lock after every client had stopped and every lease had run out. */
  leftovers: { lock: string; holders: string[]; waiters: number }[];
  endAt: number;
}

/** The fault class whose effect interval meets [from, to], or 'none'. */
export function attribute(faults: Fault[], from: number, to = from): string {
  return faults.find((f) => f.start <= to && from <= f.until)?.cls ?? 'none';
}
