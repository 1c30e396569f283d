// Watch as an async iterator: the lock's state first, then one LockChange per change. The
// stream's own flow control applies: a loop that is slow to take the next change makes the
// server send only the latest state once it catches up, never a backlog.
import { status, type ServiceError } from '@grpc/grpc-js';
import { type LostReason, WatchEvent, type LockServiceClient, type WatchResponse } from '../../gen/holdfast/v1/lock';
import { holderInfo, type HolderInfo } from './holders';

export type WatchEventName = 'state' | 'granted' | 'released' | 'expired' | 'lost' | 'value_changed' | 'deadlock';

export interface LockChange {
  /** What happened; 'state' for the first message and after this side fell behind. */
  event: WatchEventName;
  /** The holder the event is about (none for 'state'). */
  holder?: HolderInfo;
  /** Why, for 'lost'. */
  lostReason?: LostReason;
  /** For 'deadlock': a waiter for this lock was aborted to break this cycle (in words). */
  deadlock?: string;
  name: string;
  /** The holders after the change, oldest grant first. */
  holders: HolderInfo[];
  waiters: number;
  /** The last fencing token granted. */
  fencingToken: bigint;
}

const EVENT_NAMES: Partial<Record<WatchEvent, WatchEventName>> = {
  [WatchEvent.WATCH_EVENT_STATE]: 'state',
  [WatchEvent.WATCH_EVENT_GRANTED]: 'granted',
  [WatchEvent.WATCH_EVENT_RELEASED]: 'released',
  [WatchEvent.WATCH_EVENT_EXPIRED]: 'expired',
  [WatchEvent.WATCH_EVENT_LOST]: 'lost',
  [WatchEvent.WATCH_EVENT_VALUE_CHANGED]: 'value_changed',
  [WatchEvent.WATCH_EVENT_DEADLOCK]: 'deadlock',
};

export function lockChange(res: WatchResponse): LockChange {
  return {
    event: EVENT_NAMES[res.event] ?? 'state',
    holder: res.holder ? holderInfo(res.holder) : undefined,
    lostReason: res.event === WatchEvent.WATCH_EVENT_LOST ? res.lostReason : undefined,
    deadlock: res.event === WatchEvent.WATCH_EVENT_DEADLOCK ? res.deadlock : undefined,
    name: res.name,
    holders: res.holders.map(holderInfo),
    waiters: res.waiters,
    fencingToken: BigInt(res.fencingToken),
  };
}

/**
 * Yields the changes of `name` until `signal` aborts (then it returns) or the stream fails (then
 * it throws the stream's ServiceError). Breaking out of the loop ends the stream.
 */
export async function* watchLock(stub: LockServiceClient, name: string, signal?: AbortSignal): AsyncGenerator<LockChange> {
  signal?.throwIfAborted();
  const call = stub.watch({ name });
  const cancel = () => call.cancel();
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    for await (const res of call as AsyncIterable<WatchResponse>) yield lockChange(res);
  } catch (err) {
    if (signal?.aborted && (err as ServiceError).code === status.CANCELLED) return;
    throw err;
  } finally {
    signal?.removeEventListener('abort', cancel);
    call.cancel();
  }
}
