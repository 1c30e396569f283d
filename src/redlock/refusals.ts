// What Redlock mode refuses, each with its reason, in one place. Redlock grants by a majority
// vote of independent masters: there is no queue (so no FIFO order between waiters: the engine's
// waiters retry), no one record of a lock's holders (so no shared locks, semaphores or
// reentrancy), no record that ties a request id to its grant, no one Redis to publish a holder's
// value or a lock's changes from, and no one keyspace to list the locks from (the store has no
// scan). The engine asks before acting (LockStore.refusal); reentry shows only in the votes.
import { LockError } from '../engine/errors';
import type { StoreOp } from '../engine/store';
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

/** What this mode refuses before acting (LockStore.refusal): an acquire before any vote is asked for. */
export function refusalOf(op: StoreOp, params?: AcquireParams): LockError | null {
  if (op !== 'acquire') return refusal(op);
  if (!params) return null;
  if (params.mode !== Mode.EXCLUSIVE || params.limit !== 1) return refusal('kinds');
  if (params.requestId) return refusal('requestId');
  if (params.value) return refusal('value');
  return null;
}
