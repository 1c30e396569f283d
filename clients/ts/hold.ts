// Opens a Hold stream and resolves with its Lease once the lock is granted.
import { status, type ServiceError } from '@grpc/grpc-js';
import type { HoldRequest, HoldResponse, LockServiceClient } from './gen/holdfast/v1/lock';
import { NotAcquiredError } from './errors';
import { Lease } from './lease';
import type { UnaryCalls } from './rpc';
import { ResetBudget } from './streams';

/**
 * Rejects with NotAcquiredError when the wait runs out, with the signal's reason when `cancel`
 * aborts first, with a LeaseLostError when the grant arrived after its lease could have ended
 * (the stream is cancelled, which frees the hold if the server still keeps it), and with the
 * stream's ServiceError for anything else.
 */
export function openLease(
  stub: LockServiceClient,
  rpc: UnaryCalls,
  request: HoldRequest,
  cancel?: AbortSignal,
  resets = new ResetBudget(),
): Promise<Lease> {
  return new Promise((resolve, reject) => {
    cancel?.throwIfAborted();
    const sentAt = performance.now(); // the lease's anchor: no later than the request leaves
    const call = stub.hold(request);
    let lease: Lease | undefined;
    let ended = false;
    const reset = () => resets.cancel({ cancel: () => call.cancel(), ended: () => ended });
    const stop = () => {
      reject(cancel!.reason); // at once, even while the cancel itself waits for the budget
      reset();
    };
    cancel?.addEventListener('abort', stop, { once: true });

    call.on('data', (event: HoldResponse) => {
      if (lease) lease.onEvent(event);
      else if (event.acquired && cancel?.aborted) {
        // Granted while its cancel waited for the budget: give it back, which ends the stream
        // with OK and needs no reset.
        const { token, holdId } = event.acquired;
        rpc.release({ name: request.name, token, holdId }).catch(() => {});
      } else if (event.acquired) {
        cancel?.removeEventListener('abort', stop);
        lease = new Lease(call, rpc, request.name, event.acquired, sentAt, reset);
        if (lease.signal.aborted) reject(lease.signal.reason);
        else resolve(lease);
      }
    });
    call.on('error', (err: ServiceError) => {
      if (lease) return; // the 'status' handler tells the lease
      cancel?.removeEventListener('abort', stop);
      if (cancel?.aborted) reject(cancel.reason);
      else if (err.code === status.DEADLINE_EXCEEDED) reject(new NotAcquiredError(request.name, Number(request.waitTimeoutMs)));
      else reject(err);
    });
    call.on('status', (end) => {
      ended = true;
      if (lease) lease.onEnd(end);
      else if (end.code === status.OK) reject(new Error(`the Hold stream for "${request.name}" ended before the lock was granted`));
    });
  });
}
