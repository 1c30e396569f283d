// One sharded subscription per lock channel for this whole server, whoever listens: the wait
// room (hand-offs) and the watch room (watchers) share it. A channel is subscribed while it has
// a listener and left when its last listener goes.
import type { Subscriber } from './store';

export type ChannelListener = (channel: string, message: string) => void;

interface Entry {
  listeners: Set<ChannelListener>;
  /** Settles when SSUBSCRIBE is confirmed (or fails). */
  ready: Promise<void>;
}

export class LockChannels {
  private readonly entries = new Map<string, Entry>();
  /** Channels whose SSUBSCRIBE was confirmed and whose SSUNSUBSCRIBE was not yet: the subscriber's view. */
  private readonly confirmed = new Set<string>();

  constructor(private readonly subscriber: Subscriber) {
    subscriber.on('smessage', (channel: string, message: string) => {
      const entry = this.entries.get(channel);
      if (entry) for (const listener of entry.listeners) listener(channel, message);
    });
  }

  /** Adds a listener; resolves once the channel's subscription is confirmed (at once when it already was). */
  join(channel: string, listener: ChannelListener): Promise<void> {
    const existing = this.entries.get(channel);
    if (existing) {
      existing.listeners.add(listener);
      return existing.ready;
    }
    const entry: Entry = { listeners: new Set([listener]), ready: Promise.resolve() };
    entry.ready = this.subscriber.ssubscribe(channel).then(() => {
      if (this.entries.get(channel) === entry) this.confirmed.add(channel);
    });
    this.entries.set(channel, entry);
    return entry.ready;
  }

  leave(channel: string, listener: ChannelListener): void {
    const entry = this.entries.get(channel);
    if (!entry?.listeners.delete(listener) || entry.listeners.size > 0) return;
    this.entries.delete(channel);
    this.subscriber.sunsubscribe(channel).then(
      () => {
        if (!this.entries.has(channel)) this.confirmed.delete(channel);
      },
      () => {},
    );
  }

  /** Confirmed subscriptions. */
  get size(): number {
    return this.confirmed.size;
  }
}
