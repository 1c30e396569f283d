// Deadlock detection (docs/deadlocks.md): a wait that has lasted the deadlock timeout records
// where it waits and walks who-waits-for-whom from its owner, one storage read per step (each on
// one slot: the owner's wait records, then each lock's holders). A cycle back to the owner is
// read again edge by edge; if it still stands, the youngest wait in it is ended (abortWait), and
// its own server answers it through the wait path (claim: 'aborted').
import { MAX_WAIT_MS } from '../config/bounds';
import type { LockRef, WaitGraph, WaitRecord } from './store';

/** One edge of a cycle: `owner` waits for lock `name` (as `waiterId`), held by `holder`. */
export interface CycleEdge extends WaitRecord {
  owner: string;
  holder: string;
}

export type DeadlockEvent =
  /** A walk found a cycle; it is checked again before anything ends. */
  | { kind: 'found'; cycle: CycleEdge[] }
  /** An edge of the cycle was gone when checked again (or the victim no longer waited): nothing ended. */
  | { kind: 'broke'; cycle: CycleEdge[] }
  /** The victim's wait was ended with `message`. */
  | { kind: 'aborted'; cycle: CycleEdge[]; victim: CycleEdge; message: string }
  /** The walk reached its bound (owners or time) and ended nothing. */
  | { kind: 'gave_up'; owner: string; visited: number; ms: number };

export interface DeadlockOptions {
  /** How long a wait lasts before it walks (ms); 0: no detection. */
  timeoutMs: number;
  /** Owners one walk visits at most (default 256). */
  maxOwners?: number;
  /** How long one walk may take (default 1000 ms). */
  maxWalkMs?: number;
  /** The longest pause between two walks of one wait (default 30 s). */
  maxIntervalMs?: number;
  /** Test hook: a pause between finding a cycle and checking it again (a cycle that breaks meanwhile). */
  recheckDelayMs?: number;
  onEvent?: (event: DeadlockEvent) => void;
  onBackgroundError?: (err: unknown) => void;
}

/** A wait as the wait room knows it. */
export interface WatchedWait {
  name: string;
  owner: string;
  waiterId: string;
  /** performance.now() at which the wait gives up. */
  deadline: number;
}

/** A wait the detector follows: when its next step is due, and its record once written. */
interface Followed {
  wait: WatchedWait;
  startedAt: number;
  dueAt: number;
  intervalMs: number;
  /** A step (record, walk) is running. */
  busy: boolean;
  noted: Promise<unknown> | null;
}

class WalkBound extends Error {}

export class DeadlockDetector {
  private readonly maxOwners: number;
  private readonly maxWalkMs: number;
  private readonly maxIntervalMs: number;
  /** Owners this server walks from now; `again`: a wait asked meanwhile, so walk once more. */
  private readonly walking = new Map<string, { again: boolean; done: Promise<void> }>();
  /** The waits followed now, and the one sweep that looks at them while there are any. */
  private readonly followed = new Set<Followed>();
  private sweeper?: NodeJS.Timeout;
  /** How often the sweep runs: a tenth of the timeout (10 to 100 ms), so a walk starts at most that late. */
  private readonly sweepMs: number;

  constructor(
    private readonly graph: WaitGraph,
    private readonly prefix: string,
    private readonly entryLeaseMs: number,
    private readonly options: DeadlockOptions,
  ) {
    this.maxOwners = options.maxOwners ?? 256;
    this.maxWalkMs = options.maxWalkMs ?? 1000;
    this.maxIntervalMs = options.maxIntervalMs ?? 30_000;
    this.sweepMs = Math.min(100, Math.max(10, Math.round(options.timeoutMs / 10)));
  }

  /**
   * Follows one wait from its start: once it has lasted the timeout it records the wait and
   * walks, then walks again after twice as long, and so on. Returns the stop, called once the
   * wait has ended. A wait without an owner takes no part. No timer per wait: one sweep, while
   * any wait is followed, looks at them all (most end long before the timeout).
   */
  watch(wait: WatchedWait): () => void {
    if (!wait.owner) return () => {};
    const followed: Followed = { wait, startedAt: performance.now(), dueAt: 0, intervalMs: this.options.timeoutMs, busy: false, noted: null };
    followed.dueAt = followed.startedAt + followed.intervalMs;
    this.followed.add(followed);
    this.sweeper ??= setInterval(() => this.sweep(), this.sweepMs);
    return () => {
      this.followed.delete(followed);
      if (this.followed.size === 0) {
        clearInterval(this.sweeper);
        this.sweeper = undefined;
      }
      const { noted } = followed;
      if (!noted) return;
      const forget = () => this.graph.forgetWait({ prefix: this.prefix, owner: wait.owner, waiterId: wait.waiterId });
      noted.then(forget, forget).catch((err) => this.options.onBackgroundError?.(err));
    };
  }

  /** Records and walks each followed wait that is due (not one already busy with its step). */
  private sweep(): void {
    const now = performance.now();
    for (const followed of this.followed) {
      if (followed.busy || now < followed.dueAt) continue;
      followed.busy = true;
      this.step(followed, now)
        .then(
          () => (followed.intervalMs = Math.min(followed.intervalMs * 2, this.maxIntervalMs)),
          (err) => this.options.onBackgroundError?.(err),
        )
        .finally(() => {
          followed.busy = false;
          followed.dueAt = performance.now() + followed.intervalMs;
        });
    }
  }

  private async step(followed: Followed, now: number): Promise<void> {
    const { wait } = followed;
    followed.noted ??= this.graph.noteWait({
      prefix: this.prefix,
      owner: wait.owner,
      waiterId: wait.waiterId,
      name: wait.name,
      waitedMs: now - followed.startedAt,
      // A record outlives its wait by the entry lease; no wait is longer than MAX_WAIT_MS.
      keepMs: Math.min(Math.max(0, wait.deadline - now), MAX_WAIT_MS) + this.entryLeaseMs,
    });
    await followed.noted;
    if (this.followed.has(followed)) await this.walkFrom(wait.owner);
  }

  /**
   * One walk per owner at a time on this server: a wait whose timer fires while its owner's walk
   * runs asks for one more walk after it (which sees its record), rather than a walk of its own.
   * A session's thousand waits would otherwise be a thousand walks of the same owner at once.
   */
  private walkFrom(owner: string): Promise<void> {
    const running = this.walking.get(owner);
    if (running) {
      running.again = true;
      return running.done;
    }
    const entry = { again: false, done: Promise.resolve() };
    entry.done = (async () => {
      try {
        do {
          entry.again = false;
          await this.walk(owner);
        } while (entry.again);
      } finally {
        this.walking.delete(owner);
      }
    })();
    this.walking.set(owner, entry);
    return entry.done;
  }

  /** Walks from `start`; ends the youngest wait of a cycle back to it that still stands when checked again. */
  async walk(start: string): Promise<void> {
    const began = performance.now();
    const colour = new Map<string, 'grey' | 'black'>();
    let visited = 0;
    const lockOf = (name: string): LockRef => ({ prefix: this.prefix, name });

    // Depth first: a path of edges from start to `owner`; resolves with the cycle back to start, or null.
    const visit = async (owner: string, path: CycleEdge[]): Promise<CycleEdge[] | null> => {
      if (++visited > this.maxOwners || performance.now() - began > this.maxWalkMs) throw new WalkBound();
      colour.set(owner, 'grey');
      // An owner's waits on one lock all lead to the same holders: the first that still waits will do.
      const followed = new Set<string>();
      for (const wait of await this.graph.waitsOf({ prefix: this.prefix, owner })) {
        if (followed.has(wait.name)) continue;
        const edge = await this.graph.waitEdge({ lock: lockOf(wait.name), waiterId: wait.waiterId, owner });
        if (!edge.waiting) continue;
        followed.add(wait.name);
        for (const holder of edge.holders) {
          // When it was queued, by the lock's own Redis clock: exact, where the record's estimate is not.
          const step: CycleEdge = { ...wait, since: edge.queuedAt || wait.since, owner, holder };
          if (holder === start) return [...path, step];
          // Grey: a cycle without the start (its own members' walks find it); black: explored, no way back.
          if (colour.has(holder)) continue;
          const cycle = await visit(holder, [...path, step]);
          if (cycle) return cycle;
        }
      }
      colour.set(owner, 'black');
      return null;
    };

    let cycle: CycleEdge[] | null;
    try {
      cycle = await visit(start, []);
    } catch (err) {
      if (!(err instanceof WalkBound)) throw err;
      this.options.onEvent?.({ kind: 'gave_up', owner: start, visited: visited - 1, ms: performance.now() - began });
      return;
    }
    if (!cycle) return;
    this.options.onEvent?.({ kind: 'found', cycle });
    if (this.options.recheckDelayMs) await new Promise((resolve) => setTimeout(resolve, this.options.recheckDelayMs));
    for (const step of cycle) {
      const edge = await this.graph.waitEdge({ lock: lockOf(step.name), waiterId: step.waiterId, owner: step.owner });
      if (!edge.waiting || !edge.holders.includes(step.holder)) {
        this.options.onEvent?.({ kind: 'broke', cycle });
        return;
      }
    }
    const victim = youngest(cycle);
    const message = deadlockMessage(cycle, victim);
    if (await this.graph.abortWait({ lock: lockOf(victim.name), waiterId: victim.waiterId, message })) {
      this.options.onEvent?.({ kind: 'aborted', cycle, victim, message });
    } else {
      this.options.onEvent?.({ kind: 'broke', cycle });
    }
  }
}

/** The wait that began last (then the larger waiter id): the same records give every walker the same one. */
export function youngest(cycle: CycleEdge[]): CycleEdge {
  return cycle.reduce((a, b) => (b.since > a.since || (b.since === a.since && b.waiterId > a.waiterId) ? b : a));
}

/** Edges a message names at most: a long cycle's message stays a few KB (names are up to 512 bytes). */
const MESSAGE_EDGES = 8;

/** The cycle in words, starting at the victim's owner, as its call is answered. */
export function deadlockMessage(cycle: CycleEdge[], victim: CycleEdge): string {
  const at = cycle.indexOf(victim);
  const ordered = [...cycle.slice(at), ...cycle.slice(0, at)];
  const named = ordered.slice(0, MESSAGE_EDGES).map((e) => `owner "${e.owner}" waits for lock "${e.name}", held by owner "${e.holder}"`);
  if (ordered.length > MESSAGE_EDGES) named.push(`and ${ordered.length - MESSAGE_EDGES} more edges back to owner "${victim.owner}"`);
  const edges = named.join('; ');
  return `deadlock: ${edges}. This wait (owner "${victim.owner}" on lock "${victim.name}") was ended to break the cycle: it is the youngest wait in it`;
}
