// Leader election on a lock: campaign() holds it through a Hold stream with a published value,
// observe() follows who holds it through Watch. The leader is the lock's exclusive holder;
// its fencing token orders leaders, so downstream services can refuse a deposed leader's writes.
import { status, type Metadata, type ServiceError } from '@grpc/grpc-js';
import { NotAcquiredError } from './errors';
import type { HeaderTarget } from './fencing/attach';
import type { Lease } from './lease';
import type { HoldOptions } from './options';
import type { LockChange } from './watch';

/** What campaign() and observe() use of a client: its Hold and its Watch (HoldfastClient has both). */
export interface ElectionClient {
  hold(name: string, options?: HoldOptions): Promise<Lease>;
  watch(name: string, options?: { signal?: AbortSignal }): AsyncIterable<LockChange>;
}

export interface Leader {
  /** The leader's owner (empty when it gave none). */
  owner: string;
  /** What the leader published, e.g. its address. */
  value: string;
  /** Greater for every new leader: the order of leaders. */
  fencingToken: bigint;
}

export interface CampaignOptions extends Omit<HoldOptions, 'value' | 'shared' | 'limit' | 'waitMs'> {}

/** Leadership won by campaign(): ended by resign(), or lost (then `signal` aborts). */
export class Leadership {
  constructor(private readonly lease: Lease) {}

  get name(): string {
    return this.lease.name;
  }

  /** This leader's fencing token: send it with every write the leadership allows. */
  get fencingToken(): bigint {
    return this.lease.fencingToken;
  }

  /** This leader's signed fence (the latest renewal's); undefined when the server signs none. Never log it. */
  get signedFence(): string | undefined {
    return this.lease.signedFence;
  }

  /** Adds this leader's fence to a request's `headers` and returns them (Lease.fence). */
  fence<T extends HeaderTarget>(headers: T): T {
    return this.lease.fence(headers);
  }

  /** Adds this leader's fence to gRPC `metadata` (a new Metadata by default) and returns it. */
  fenceMetadata(metadata?: Metadata): Metadata {
    return this.lease.fenceMetadata(metadata);
  }

  /**
   * Aborts, with a LeaseLostError as its reason, when leadership is or may be lost: stop acting as
   * the leader at once. Counted conservatively on this side's clock, so it aborts in time even when
   * no message can arrive.
   */
  get signal(): AbortSignal {
    return this.lease.signal;
  }

  /** Resolves with the LeaseLostError when leadership is lost (never when it is resigned). */
  get lost(): Promise<unknown> {
    const signal = this.lease.signal;
    if (signal.aborted) return Promise.resolve(signal.reason);
    return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
  }

  /** Publishes a new value to observers. */
  proclaim(value: string): Promise<void> {
    return this.lease.setValue(value);
  }

  /** Steps down: the lock is freed at once and the next candidate is elected. */
  resign(): Promise<void> {
    return this.lease.release();
  }
}

/** The longest wait one Hold may ask for; campaign() asks again after it. */
const CAMPAIGN_WAIT_MS = 86_400_000;

/** Waits until this candidate leads `name`, publishing `value`. Abort `options.signal` to give up. */
export async function campaign(client: ElectionClient, name: string, value: string, options: CampaignOptions = {}): Promise<Leadership> {
  for (;;) {
    try {
      return new Leadership(await client.hold(name, { ...options, value, waitMs: CAMPAIGN_WAIT_MS }));
    } catch (err) {
      if (!(err instanceof NotAcquiredError)) throw err;
    }
  }
}

export interface ObserveOptions {
  /** Stops observing: the iterator returns. */
  signal?: AbortSignal;
  /** How long to wait before watching again after the stream failed (server restart); default 1000 ms. */
  retryMs?: number;
}

/**
 * Yields the leader of `name` (null while there is none) now and after every change. A holder
 * that vanished is no leader, though the lock stays closed until its lease runs out.
 * Survives the watch stream failing: it watches again after `retryMs`.
 */
export async function* observe(client: ElectionClient, name: string, options: ObserveOptions = {}): AsyncGenerator<Leader | null> {
  const { signal, retryMs = 1000 } = options;
  let last: Leader | null | undefined;
  while (!signal?.aborted) {
    try {
      for await (const change of client.watch(name, { signal })) {
        const holder = change.holders.find((h) => h.holdCount > 0 && h.mode === 'exclusive');
        const leader = holder ? { owner: holder.owner, value: holder.value, fencingToken: holder.fencingToken } : null;
        if (last === undefined || !sameLeader(last, leader)) yield leader;
        last = leader;
      }
    } catch (err) {
      const code = (err as ServiceError).code;
      if (code === status.INVALID_ARGUMENT || code === status.UNAUTHENTICATED || code === status.PERMISSION_DENIED) throw err;
    }
    if (signal?.aborted) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, retryMs);
      signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  }
}

function sameLeader(a: Leader | null, b: Leader | null): boolean {
  if (!a || !b) return a === b;
  return a.fencingToken === b.fencingToken && a.value === b.value && a.owner === b.owner;
}
