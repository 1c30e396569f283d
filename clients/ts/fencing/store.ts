// What every fence store does: compare a request's token with the newest seen for its lock and
// record it when it is not older, as one atomic step; and, when its backend cannot answer, say so
// within a bound (the guard then fails closed: 503 / UNAVAILABLE).

export interface FenceDecision {
  /** True when the token is not older than the newest seen (equal: the same holder again). */
  accepted: boolean;
  /** The newest token for the lock after this check (the request's own when accepted). */
  newest: bigint;
}

export interface FenceStore {
  check(lock: string, token: bigint): Promise<FenceDecision>;
}

/** How long the Redis and PostgreSQL stores wait for their backend before the guard fails closed, by default. */
export const DEFAULT_STORE_TIMEOUT_MS = 1000;

/** A store's backend did not answer (down, unreachable, or slower than the bound): the cause in words. */
export class FenceStoreUnavailableError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'FenceStoreUnavailableError';
  }
}

/**
 * `work`, or a FenceStoreUnavailableError once `timeoutMs` passed (`slow` says so in words) or when
 * it fails (`explain` turns the driver's error into words: a driver's own message is not shown).
 */
export function withinBound<T>(work: Promise<T>, timeoutMs: number, slow: string, explain: (err: unknown) => string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new FenceStoreUnavailableError(slow)), timeoutMs);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err) => {
        clearTimeout(timer);
        reject(err instanceof FenceStoreUnavailableError ? err : new FenceStoreUnavailableError(explain(err)));
      },
    );
  });
}

/** A bound in ms as an option: a positive whole number. */
export function checkedTimeout(timeoutMs: number | undefined, option = 'timeoutMs'): number {
  const value = timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`${option} must be a positive whole number of ms, got ${value}`);
  return value;
}

/** Loads an optional peer dependency of @holdfast/client (a store's driver), or says which to install. */
export async function optionalPeer<T>(load: () => Promise<T>, who: string, install: string): Promise<T> {
  try {
    return await load();
  } catch {
    throw new Error(`${who} needs the ${install.replace(/@.*/, '')} package (an optional peer dependency of @holdfast/client): npm install ${install}`);
  }
}
