// Watching locks without polling. Every script that changes a holder publishes a short notice on
// the lock's channel (lua/includes/events.lua; the queue's hand-offs publish too), the one
// wake-ups use, and this server holds one subscription per watched lock however many watch it.
// A notice makes it read the lock once (inspect-3; notices that arrive meanwhile fold into one
// more read), and the difference from the last read becomes events, each with the state after it.
// An expiry publishes nothing, so each watched lock has one timer set for when its earliest lease
// would end: then it reads again (a renewed lease just moves the timer). A waiter aborted to break
// a deadlock is announced by its own notice ('x <cycle>'), reported after the next read's changes.
import type { LockError } from './errors';
import type { LockChannels } from './lock-channels';
import type { HolderInfo, LockInfo, VanishReason } from './types';

/** What the watch room reads locks through (LockEngine provides it). */
export interface WatchSource {
  channelOf(name: string): string;
  inspect(name: string): Promise<LockInfo>;
}

export type WatchEventKind = 'state' | 'granted' | 'released' | 'expired' | 'lost' | 'value_changed' | 'deadlock';

export interface LockState {
  name: string;
  /** Live holders, oldest grant first; a vanished one shows with hold count 0 until its lease ends. */
  holders: HolderInfo[];
  waiters: number;
  /** The last fencing token granted (decimal). */
  fencingToken: string;
}

export interface WatchUpdate {
  event: WatchEventKind;
  /** The holder the event is about; none for 'state'. Its ttlMs is 0 once it is gone. */
  holder?: HolderInfo;
  /** For 'lost'. */
  lostReason?: VanishReason;
  /** For 'deadlock': the cycle in words, as the aborted waiter was answered. */
  deadlock?: string;
  state: LockState;
}

export interface WatchListener {
  onUpdate(update: WatchUpdate): void;
  /** The watch ended from this side (shutdown). */
  onEnd(error: LockError): void;
}

/** A read that finds the lock's state unreadable is tried again after this long. */
const RETRY_MS = 1000;
/** The expiry timer never fires sooner than this after a read (leases as short as 10 ms exist). */
const MIN_LOOK_MS = 20;

/** The watchers this server has on one lock. */
interface Feed {
  name: string;
  channel: string;
  listeners: Set<WatchListener>;
  /** The last state read; null until the first read. */
  state: LockState | null;
  readAt: number;
  /** What notices said about holders (by fence), with the read count when they arrived. */
  notes: Map<string, { what: string; read: number }>;
  /** Waiters aborted to break a deadlock, with the read count when the notice arrived. */
  aborts: { cycle: string; read: number }[];
  reads: number;
  reading: Promise<void> | null;
  readAgain: boolean;
  timer?: NodeJS.Timeout;
}

export class WatchRoom {
  private readonly feeds = new Map<string, Feed>();
  private readonly byChannel = new Map<string, Feed>();
  private readonly onMessage = (channel: string, message: string) => this.heard(channel, message);

  constructor(
    private readonly engine: WatchSource,
    private readonly channels: LockChannels,
    private readonly onBackgroundError: (err: unknown) => void,
  ) {}

  watch(name: string, listener: WatchListener): () => void {
    let feed = this.feeds.get(name);
    if (feed) {
      feed.listeners.add(listener);
      if (feed.state) listener.onUpdate({ event: 'state', state: feed.state });
    } else {
      feed = this.open(name, listener);
    }
    const joined = feed;
    return () => this.leave(joined, listener);
  }

  private open(name: string, listener: WatchListener): Feed {
    const feed: Feed = {
      name,
      channel: this.engine.channelOf(name),
      listeners: new Set([listener]),
      state: null,
      readAt: 0,
      notes: new Map(),
      aborts: [],
      reads: 0,
      reading: null,
      readAgain: false,
    };
    this.feeds.set(name, feed);
    this.byChannel.set(feed.channel, feed);
    // Read once subscribed, so that no change falls between the read and the first notice.
    this.channels.join(feed.channel, this.onMessage).then(
      () => void this.read(feed),
      (err) => {
        this.onBackgroundError(err);
        this.lookAgain(feed, RETRY_MS);
      },
    );
    return feed;
  }

  private leave(feed: Feed, listener: WatchListener): void {
    if (!feed.listeners.delete(listener) || feed.listeners.size > 0) return;
    clearTimeout(feed.timer);
    this.feeds.delete(feed.name);
    this.byChannel.delete(feed.channel);
    this.channels.leave(feed.channel, this.onMessage);
  }

  private heard(channel: string, message: string): void {
    const feed = this.byChannel.get(channel);
    if (!feed) return;
    const [kind, what, fence] = message.split(' ');
    if (kind === 'e' && what && fence) feed.notes.set(fence, { what, read: feed.reads });
    if (kind === 'x') feed.aborts.push({ cycle: message.slice(2), read: feed.reads });
    void this.read(feed);
  }

  /** At most one read in flight per lock; notices during it cause exactly one more. */
  private read(feed: Feed): Promise<void> {
    if (feed.reading) {
      feed.readAgain = true;
      return feed.reading;
    }
    feed.reading = (async () => {
      do {
        feed.readAgain = false;
        const started = feed.reads++;
        let info: LockInfo;
        try {
          info = await this.engine.inspect(feed.name);
        } catch (err) {
          this.onBackgroundError(err);
          this.lookAgain(feed, RETRY_MS);
          return;
        }
        if (!this.feeds.has(feed.name)) return;
        this.apply(feed, info, started);
      } while (feed.readAgain);
    })().finally(() => {
      feed.reading = null;
    });
    return feed.reading;
  }

  private apply(feed: Feed, info: LockInfo, started: number): void {
    const state: LockState = { name: info.name, holders: info.holders, waiters: info.waiters, fencingToken: info.fencingToken };
    const before = feed.state;
    const now = performance.now();
    const updates: WatchUpdate[] = before ? changes(before, state, feed.notes, now - feed.readAt) : [{ event: 'state' as const, state }];
    // Notices from before this read started are reflected in it; later ones wait for the next read.
    for (const [fence, note] of feed.notes) if (note.read <= started) feed.notes.delete(fence);
    if (feed.aborts.length > 0) {
      for (const abort of feed.aborts) if (abort.read <= started) updates.push({ event: 'deadlock', deadlock: abort.cycle, state });
      feed.aborts = feed.aborts.filter((abort) => abort.read > started);
    }
    feed.state = state;
    feed.readAt = now;
    for (const update of updates) for (const listener of feed.listeners) listener.onUpdate(update);
    const nextEnd = Math.min(...state.holders.map((h) => h.ttlMs));
    clearTimeout(feed.timer);
    feed.timer = undefined;
    if (Number.isFinite(nextEnd)) this.lookAgain(feed, Math.max(MIN_LOOK_MS, nextEnd + 1));
  }

  private lookAgain(feed: Feed, inMs: number): void {
    clearTimeout(feed.timer);
    feed.timer = setTimeout(() => {
      feed.timer = undefined;
      if (this.feeds.get(feed.name) === feed) void this.read(feed);
    }, inMs);
  }

  /** Locks watched and watchers, counted when asked. */
  stats(): { watchedLocks: number; watchers: number } {
    let watchers = 0;
    for (const feed of this.feeds.values()) watchers += feed.listeners.size;
    return { watchedLocks: this.feeds.size, watchers };
  }

  async closeAll(error: LockError): Promise<void> {
    for (const feed of [...this.feeds.values()]) {
      for (const listener of [...feed.listeners]) {
        this.leave(feed, listener);
        listener.onEnd(error);
      }
    }
  }
}

const LOST_REASONS: ReadonlySet<string> = new Set<VanishReason>(['disconnected', 'max_hold', 'backend_unavailable', 'server_shutdown']);

/**
 * The events between two reads, in the order a reader expects: holders that went (released or
 * expired), holders that vanished (lost), new values, then new holders. `sinceMs` is the time
 * between the reads: a holder gone without a notice whose lease had run out by then expired.
 */
export function changes(before: LockState, after: LockState, notes: Map<string, { what: string }>, sinceMs: number): WatchUpdate[] {
  const now = new Map(after.holders.map((h) => [h.fencingToken, h]));
  const then = new Map(before.holders.map((h) => [h.fencingToken, h]));
  const gone: WatchUpdate[] = [];
  const lost: WatchUpdate[] = [];
  const values: WatchUpdate[] = [];
  const granted: WatchUpdate[] = [];
  for (const [fence, holder] of then) {
    if (now.has(fence)) continue;
    const what = notes.get(fence)?.what;
    const released = what === 'released' || (what === undefined && holder.holdCount > 0 && holder.ttlMs > sinceMs);
    gone.push({ event: released ? 'released' : 'expired', holder: { ...holder, ttlMs: 0 }, state: after });
  }
  for (const [fence, holder] of now) {
    const prior = then.get(fence);
    if (!prior) granted.push({ event: 'granted', holder, state: after });
    if (holder.holdCount === 0 && (!prior || prior.holdCount > 0)) {
      const what = notes.get(fence)?.what ?? '';
      const why = what.startsWith('lost:') && LOST_REASONS.has(what.slice(5)) ? (what.slice(5) as VanishReason) : 'disconnected';
      // One granted and lost between two reads is reported in that order.
      (prior ? lost : granted).push({ event: 'lost', holder, lostReason: why, state: after });
    } else if (prior && prior.value !== holder.value) {
      values.push({ event: 'value_changed', holder, state: after });
    }
  }
  return [...gone, ...lost, ...values, ...granted];
}
