// How the CLI names a lock's kind, in the dashboard's words (web/dashboard/dashboard.js kindOf).

/** A semaphore (a limit above one, with how many of its places are taken), shared (read) or exclusive. */
export function lockKind(limit: number, holders: number, shared: boolean): string {
  if (limit > 1) return `semaphore, ${holders} of ${limit}`;
  return shared ? 'shared (read)' : 'exclusive';
}
