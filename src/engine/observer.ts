// What the engine tells whoever watches it (metrics, traces): lock events and timings, each said
// once, from the one place it happens. The engine calls these methods directly (no events, no
// allocations of its own); NO_OBSERVER does nothing, so an engine nobody watches pays a few
// empty calls per request.
import type { ScriptName } from './scripts';
import type { LostReason } from './types';

/** What a start method returned, handed back to its end method (a start time, a span). */
export type Probe = unknown;

/**
 * A script run (in Redlock mode: its rounds over every master). 'renewBatch' is timed per round
 * trip: the watchdog's renewal calls of one tick on one node, however many it pipelines.
 */
export type ScriptRun = ScriptName;

export type AcquireOutcome = 'granted' | 'not_granted' | 'error';

export interface EngineObserver {
  scriptStart(script: ScriptRun): Probe;
  /** `failed`: Redis could not be reached or answered an error. */
  scriptEnd(probe: Probe, script: ScriptRun, failed: boolean): void;
  /** An acquire began (before its first script). */
  acquireStart(): Probe;
  /** An acquire ended: a grant counts once here. */
  acquireEnd(probe: Probe, outcome: AcquireOutcome): void;
  /** A caller joined the queue of a lock. */
  waitStart(): Probe;
  waitEnd(probe: Probe, outcome: AcquireOutcome): void;
  /** A queued waiter was answered with its grant `ms` after this server heard the queue served it. */
  handoff(ms: number): void;
  /** A hold was given back; `vanished`: not by its holder (its stream ended without a cancel). */
  released(vanished: boolean): void;
  /** A Release or Renew found its grant gone: it expired (or was released already). */
  tokenGone(op: 'release' | 'renew'): void;
  /** A kept lease (Hold stream) ended other than by its holder's word. */
  leaseLost(reason: LostReason): void;
  /** A waiter of this server was answered ABORTED to break a deadlock (deadlocks.ts). */
  deadlock(): void;
}

const nothing = () => undefined;

export const NO_OBSERVER: EngineObserver = {
  scriptStart: nothing,
  scriptEnd: nothing,
  acquireStart: nothing,
  acquireEnd: nothing,
  waitStart: nothing,
  waitEnd: nothing,
  handoff: nothing,
  released: nothing,
  tokenGone: nothing,
  leaseLost: nothing,
  deadlock: nothing,
};
