// What Redlock mode refuses, each with its reason, in one place. Redlock grants by a majority
// vote of independent masters: there is no queue (so no FIFO order between waiters), no one
// record of a lock's holders (so no shared locks, semaphores or reentrancy), no record that ties
// a request id to its grant, and no one Redis to publish a holder's value or a lock's changes from.
import { LockError } from '../engine/errors';
import { Mode, type AcquireParams } from '../engine/types';

const REFUSED = {
  kinds: 'a shared lock or a semaphore',
  reentry: 're-entering a lock its owner holds',
  requestId: 'request_id',
  value: 'value',
  setValue: 'SetValue',
  watch: 'Watch',
} as const;

export type Refused = keyof typeof REFUSED;

export function refusal(what: Refused): LockError {
  return new LockError(
    'conflict',
    `${REFUSED[what]} is not supported in Redlock mode (--redlock): it grants exclusive locks only, without reentrancy or request ids`,
  );
}

/** The refusal an acquire meets before any vote is asked for, or null. */
export function acquireRefusal(params: AcquireParams): LockError | null {
  if (params.mode !== Mode.EXCLUSIVE || params.limit !== 1) return refusal('kinds');
  if (params.requestId) return refusal('requestId');
  if (params.value) return refusal('value');
  return null;
}
