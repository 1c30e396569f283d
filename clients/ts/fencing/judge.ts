// What both guards (HTTP and gRPC) do with a request's fence: steps 1 to 7 (admit.ts), then the
// store's compare-and-record (step 8). Only a fence that passed every earlier step reaches the store.
import { admitFence, checkRules, type AdmittedFence, type FenceRules, type FenceValues } from './admit';
import { FenceRefusal, type Refusal } from './refusal';
import { FenceStoreUnavailableError, type FenceStore } from './store';
import type { FenceNames } from './wire';

/** Options both guards take; `R` is what the lock rule reads (the HTTP request, or a gRPC call's path and metadata). */
export interface GuardOptions<R extends unknown[]> extends FenceRules {
  /**
   * The lock that protects the resource a request touches: a name, or a rule from the request.
   * Required with `keys` (else a fence for any lock would pass); without keys, given, it is
   * checked against unsigned fences' lock too.
   */
  lock?: string | ((...request: R) => string);
  /** Called for every stale request refused (to report a holder that lost its lock). */
  onRefused?: (refusal: Refusal) => void;
}

/** The one failure of a guard that is not a refusal (500 fence_guard_misconfigured / INTERNAL): the lock rule threw or gave no name. */
export const LOCK_RULE_FAILED = "the fence guard's lock rule gave no lock name for this request";

function lockOf<R extends unknown[]>(rule: (...request: R) => string, request: R): string {
  let name: unknown;
  try {
    name = rule(...request);
  } catch {
    throw new Error(LOCK_RULE_FAILED);
  }
  if (typeof name !== 'string' || name === '') throw new Error(LOCK_RULE_FAILED);
  return name;
}

/** A guard's judgement of one request: its admitted fence, or why it is refused. */
export type Judge<R extends unknown[]> = (values: FenceValues, request: R) => Promise<AdmittedFence>;

/** Checks the options once (throws RangeError naming the one at fault) and returns the judge. */
export function judge<R extends unknown[]>(store: FenceStore, options: GuardOptions<R>, names: FenceNames, who: string): Judge<R> {
  checkRules(options, who);
  const { lock } = options;
  if (options.keys && lock === undefined) {
    throw new RangeError(
      `${who}: with keys, give the resource's lock (the lock option: a name, or a rule from the request); without it a fence for any lock would pass`,
    );
  }
  if (lock === '') throw new RangeError(`${who}: lock must not be empty`);
  return async (values, request) => {
    const resourceLock = typeof lock === 'function' ? lockOf(lock, request) : lock;
    const fence = admitFence(values, names, options, resourceLock);
    let decision: Awaited<ReturnType<FenceStore['check']>>;
    try {
      decision = await store.check(fence.lock, fence.token);
    } catch (err) {
      const cause = err instanceof FenceStoreUnavailableError ? err.reason : 'the store could not check the fencing token';
      throw FenceRefusal.storeUnavailable(fence.lock, cause);
    }
    if (!decision.accepted) {
      options.onRefused?.({ lock: fence.lock, token: fence.token, newest: decision.newest });
      throw FenceRefusal.stale(fence.lock, fence.token, decision.newest);
    }
    return fence;
  };
}
