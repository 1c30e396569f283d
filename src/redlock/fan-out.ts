// The lock channels' subscriber in Redlock mode: a release publishes its wake-up on each master
// whose vote it took back, so a lock's channel is subscribed on every master, and each message
// heard on any of them is passed on once, under the channel name the engine listens on.
import { EventEmitter } from 'node:events';
import { redlockKeysOf } from '../engine/keys';
import type { Subscriber } from '../engine/store';
import type { RedlockNode } from './nodes';

export class FanOutSubscriber extends EventEmitter implements Subscriber {
  /** The engine's channel of each channel subscribed on the masters. */
  private readonly names = new Map<string, string>();
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
    const onNodes = redlockKeysOf(channel).channel;
    this.names.set(onNodes, channel);
    // A node that is down or frozen would hold the subscription up: wait for the others only as
    // long as a node may take to answer (a missed wake-up costs one backoff, not correctness).
    let timer: NodeJS.Timeout | undefined;
    const subscribed = Promise.all(this.nodes.map((n) => n.subscribe(onNodes).catch(() => {})));
    await Promise.race([subscribed, new Promise((resolve) => (timer = setTimeout(resolve, this.nodeTimeoutMs)))]);
    clearTimeout(timer);
  }

  async sunsubscribe(channel: string): Promise<void> {
    const onNodes = redlockKeysOf(channel).channel;
    this.names.delete(onNodes);
    for (const n of this.nodes) n.unsubscribe(onNodes).catch(() => {});
  }

  /** A message one master published on a channel subscribed here. */
  heard(onNodes: string, message: string): void {
    const channel = this.names.get(onNodes);
    if (channel !== undefined) this.emit('smessage', channel, message);
  }
}
