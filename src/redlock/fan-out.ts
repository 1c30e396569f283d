// The lock channels' subscriber in Redlock mode: a release publishes its wake-up on each master
// whose vote it took back, so a lock's channel (RedlockStore.channelOf) is subscribed on every
// master, and each message heard on any of them is passed on.
import { EventEmitter } from 'node:events';
import type { Subscriber } from '../engine/store';
import type { RedlockNode } from './nodes';

export class FanOutSubscriber extends EventEmitter implements Subscriber {
  /** The channels subscribed on the masters. */
  private readonly channels = new Set<string>();
  private nodes: RedlockNode[] = [];

  constructor(
    /** How long one node may take to answer: a subscription waits no longer for a silent one. */
    private readonly nodeTimeoutMs: number,
  ) {
    super();
    this.setMaxListeners(0); // one listener per engine (namespace) on these masters
  }

  /** The masters to subscribe on (known once they are connected, which needs heard() first). */
  attach(nodes: RedlockNode[]): void {
    this.nodes = nodes;
  }

  async ssubscribe(channel: string): Promise<void> {
    this.channels.add(channel);
    // A node that is down or frozen would hold the subscription up: wait for the others only as
    // long as a node may take to answer (a missed wake-up costs one backoff, not correctness).
    let timer: NodeJS.Timeout | undefined;
    const subscribed = Promise.all(this.nodes.map((n) => n.subscribe(channel).catch(() => {})));
    await Promise.race([subscribed, new Promise((resolve) => (timer = setTimeout(resolve, this.nodeTimeoutMs)))]);
    clearTimeout(timer);
  }

  async sunsubscribe(channel: string): Promise<void> {
    this.channels.delete(channel);
    for (const n of this.nodes) n.unsubscribe(channel).catch(() => {});
  }

  /** A message one master published on a channel subscribed here. */
  heard(channel: string, message: string): void {
    if (this.channels.has(channel)) this.emit('smessage', channel, message);
  }
}
