// The locks a Session holds, each kept by the engine's watchdog as a Hold's is, and the one
// SessionRenewed that stands for all their renewals. The session's deadline is the earliest
// confirmed lease end over its locks: a client that applies Hold's rule to it never believes any
// of them held past the moment the server could lose it. It is reported when it changes, at most
// once per watchdog tick (one tick's renewals arrive together), never once per lock.
//
// The earliest end comes from a min-heap of lease ends, not a walk over every lock: a renewal
// pushes its lock's new end (O(log n)), and an entry its lock has moved past, or left, goes stale
// and is dropped when it comes to the top. With 10 000 locks a walk per tick cost more than the
// renewals it reported.
import { Heap } from 'heap-js';
import type { KeptLease } from '../engine/types';

export interface Held {
  holdId: string;
  /** The hold operation that took it: its `lost` notice carries this op_id. */
  opId: string;
  name: string;
  lease: KeptLease;
  /** The latest confirmed renewal (or the grant): the lease ends no earlier than start + ttlMs (performance.now()). */
  start: number;
  ttlMs: number;
}

export interface SessionDeadline {
  ttlMs: number;
  /** performance.now() when the renewal that ends first was sent. */
  leaseStart: number;
  locks: number;
}

/** A lock's lease end when it was pushed; stale once the lock was renewed since, or left. */
interface End {
  at: number;
  held: Held;
}

export class SessionLeases {
  private readonly held = new Map<string, Held>();
  private readonly ends = new Heap<End>((a, b) => a.at - b.at);
  /** The deadline the client was last told (start + ttlMs), lowered by each lock added since. */
  private told = Infinity;
  private flushQueued = false;

  constructor(private readonly report: (deadline: SessionDeadline) => void) {}

  get size(): number {
    return this.held.size;
  }

  /** A new lock: its grant answer tells the client its deadline, so nothing is reported now. */
  add(held: Held): void {
    this.held.set(held.holdId, held);
    this.ends.push({ at: held.start + held.ttlMs, held });
    // Until a SessionRenewed covers it, the client counts this lock from its own grant: a later
    // deadline equal to the one told before must still be reported.
    this.told = Math.min(this.told, held.start + held.ttlMs);
  }

  renewed(holdId: string, ttlMs: number, start: number): void {
    const held = this.held.get(holdId);
    if (!held) return;
    held.start = start;
    held.ttlMs = ttlMs;
    this.ends.push({ at: start + ttlMs, held });
    this.queueFlush();
  }

  /** The lock left the session (lost or released): the deadline of the others may move forward. */
  remove(holdId: string): Held | undefined {
    const held = this.held.get(holdId);
    if (!held) return undefined;
    this.held.delete(holdId);
    this.queueFlush();
    return held;
  }

  /** Every lock, taken out of the session: the caller lets go of them or abandons them. */
  takeAll(): Held[] {
    const all = [...this.held.values()];
    this.held.clear();
    this.ends.clear();
    return all;
  }

  private queueFlush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    // After the tick's other renewals (one pipeline's replies settle together): one message.
    setImmediate(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  private flush(): void {
    const earliest = this.earliest();
    if (!earliest) return;
    const end = earliest.start + earliest.ttlMs;
    if (end === this.told) return;
    this.told = end;
    this.report({ ttlMs: earliest.ttlMs, leaseStart: earliest.start, locks: this.held.size });
  }

  /** The lock whose confirmed lease ends first; stale entries on the way are dropped. */
  private earliest(): Held | undefined {
    for (let top = this.ends.peek(); top; top = this.ends.peek()) {
      const { at, held } = top;
      if (this.held.get(held.holdId) === held && held.start + held.ttlMs === at) return held;
      this.ends.pop();
    }
    return undefined;
  }

  /** Entries in the deadline heap, stale ones included (tests: it must not grow with renewals). */
  get heapSize(): number {
    return this.ends.size();
  }
}
