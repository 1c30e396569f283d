// Opens a Hold stream and resolves with its Lease once the lock is granted.
import { status, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import type { HoldAcquired, HoldRequest, HoldResponse, LockServiceClient } from '../../gen/holdfast/v1/lock';
import { countedFrom, type LeaseClock } from './deadline';
import { deadlockOr, NotAcquiredError } from './errors';
import { Lease } from './lease';
import { isServiceError, type UnaryCalls } from './rpc';
import type { SessionConnection } from './session';
import { ResetBudget } from './streams';

/**
 * Rejects with NotAcquiredError when the wait runs out, DeadlockError when it was ended to break a
 * deadlock, with the signal's reason when `cancel`
 * aborts first, with a LeaseLostError when the grant arrived after its lease could have ended
 * (the stream is cancelled, which frees the hold if the server still keeps it), and with the
 * stream's ServiceError for anything else.
 */
export function openLease(stub: LockServiceClient, rpc: UnaryCalls, request: HoldRequest, cancel?: AbortSignal, resets = new ResetBudget()): Promise<Lease> {
  return openStream<HoldAcquired>(
    {
      name: request.name,
      lockName: request.name,
      waitMs: Number(request.waitTimeoutMs),
      start: () => stub.hold(request),
      build: (call, acquired, sentAt, reset) => new Lease(call, rpc, request.name, acquired, countedFrom(sentAt), reset),
      giveBack: ({ token, holdId }) => rpc.release({ name: request.name, token, holdId }),
    },
    cancel,
    resets,
  );
}

/**
 * Holds a lock under the client's session: the same Lease, its deadline counted from the session's
 * anchors (its open and its latest pongs: deadline.ts), renewed by the session's `renewed`
 * messages. Rejects as openLease does. `rpc` gives it back with its hold_id over the session.
 */
export function openSessionLease(session: SessionConnection, rpc: UnaryCalls, request: HoldRequest, cancel?: AbortSignal): Promise<Lease> {
  const build = (acquired: HoldAcquired, clock: LeaseClock, giveBack: () => void) =>
    new Lease({ cancel: giveBack }, rpc, request.name, acquired, clock, giveBack);
  return sessionLease(request.name, Number(request.waitTimeoutMs), () => session.hold(request, build, cancel));
}

/** A lease (or lease set) `take` holds under a session, with the errors openStream gives for a stream's. */
export async function sessionLease<L extends Lease>(name: string, waitMs: number, take: () => Promise<L>): Promise<L> {
  let lease: L;
  try {
    lease = await take();
  } catch (err) {
    if (isServiceError(err) && err.code === status.DEADLINE_EXCEEDED) throw new NotAcquiredError(name, waitMs);
    throw err;
  }
  if (lease.signal.aborted) throw lease.signal.reason; // granted too late: already given back
  return lease;
}

/** How one kind of holding stream (Hold, HoldSet) starts, becomes a Lease, and gives back a grant nobody wants. */
export interface HoldingStream<Acquired> {
  /** For errors: the lock's name, or a set's. */
  name: string;
  /** The one lock's name (a Hold), none for a set: what a DeadlockError names. */
  lockName?: string;
  waitMs: number;
  start(): ClientReadableStream<{ acquired?: Acquired }>;
  build(call: ClientReadableStream<HoldResponse>, acquired: Acquired, sentAt: number, reset: () => void): Lease;
  giveBack(acquired: Acquired): Promise<unknown>;
}

export function openStream<Acquired>(kind: HoldingStream<Acquired>, cancel?: AbortSignal, resets = new ResetBudget()): Promise<Lease> {
  return new Promise((resolve, reject) => {
    cancel?.throwIfAborted();
    const sentAt = performance.now(); // the lease's anchor: no later than the request leaves
    const call = kind.start();
    let lease: Lease | undefined;
    let ended = false;
    const reset = () => resets.cancel({ cancel: () => call.cancel(), ended: () => ended });
    const stop = () => {
      reject(cancel!.reason); // at once, even while the cancel itself waits for the budget
      reset();
    };
    cancel?.addEventListener('abort', stop, { once: true });

    call.on('data', (event: { acquired?: Acquired }) => {
      if (lease) lease.onEvent(event as HoldResponse);
      else if (event.acquired && cancel?.aborted) {
        // Granted while its cancel waited for the budget: give it back, which ends the stream
        // with OK and needs no reset.
        kind.giveBack(event.acquired).catch(() => {});
      } else if (event.acquired) {
        cancel?.removeEventListener('abort', stop);
        lease = kind.build(call as ClientReadableStream<HoldResponse>, event.acquired, sentAt, reset);
        if (lease.signal.aborted) reject(lease.signal.reason);
        else resolve(lease);
      }
    });
    call.on('error', (err: ServiceError) => {
      if (lease) return; // the 'status' handler tells the lease
      cancel?.removeEventListener('abort', stop);
      if (cancel?.aborted) reject(cancel.reason);
      else if (err.code === status.DEADLINE_EXCEEDED) reject(new NotAcquiredError(kind.name, kind.waitMs));
      else reject(deadlockOr(err, kind.lockName));
    });
    call.on('status', (end) => {
      ended = true;
      if (lease) lease.onEnd(end);
      else if (end.code === status.OK) reject(new Error(`the Hold stream for "${kind.name}" ended before the lock was granted`));
    });
  });
}
