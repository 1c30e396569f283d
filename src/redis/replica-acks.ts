// Replica acknowledgement: `WAIT n timeout` pipelined after a write on the same connection, so
// it waits for exactly the writes this connection made, that write included. WAIT cannot run
// inside a script. The timeout stays under the connection's command timeout: WAIT blocks the
// connection while it waits, and the calls behind it wait too.
import type { ChainableCommander, Cluster, Redis } from 'ioredis';

export type SyncReplicas = number | 'auto';

/** Every replica the master lists, online or catching up: each could be promoted (undefined: Redis away). */
export async function listedReplicas(redis: Redis | Cluster): Promise<number | undefined> {
  try {
    return (String(await redis.info('replication')).match(/^slave\d+:/gm) ?? []).length;
  } catch {
    return undefined;
  }
}

/** How often 'auto' counts the master's replicas again. */
const COUNT_EVERY_MS = 1000;

export class ReplicaAcks {
  /** Replicas the master listed last time ('auto'); never below 1, so 'auto' never asks for none. */
  private listed = 1;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly wanted: SyncReplicas,
    private readonly timeoutMs: number,
  ) {
    if (wanted === 'auto') {
      void this.count();
      this.timer = setInterval(() => void this.count(), COUNT_EVERY_MS);
      this.timer.unref();
    }
  }

  /** Replicas that must acknowledge a write now. */
  get needed(): number {
    return this.wanted === 'auto' ? this.listed : this.wanted;
  }

  confirmAfter(pipeline: ChainableCommander): (reply: unknown) => boolean {
    const needed = this.needed;
    pipeline.call('WAIT', needed, this.timeoutMs);
    return (reply) => Number(reply) >= needed;
  }

  private async count(): Promise<void> {
    const listed = await listedReplicas(this.redis);
    // Unknown (Redis away): keep the last count; nothing is confirmed meanwhile anyway.
    if (listed !== undefined) this.listed = Math.max(1, listed);
  }

  close(): void {
    clearInterval(this.timer);
  }
}
