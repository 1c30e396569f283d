// What an operator sees of a running server, in one read: a page of the locks with holders or
// waiters, grants per second, and the backend's state. The dashboard (src/dashboard) streams it
// to a browser and AdminService.GetOverview gives it to `holdfast status --watch`: one picture.
import type { LockBackend } from '../engine/backend';
import type { GrantRate } from './grant-rate';
import { readLockPage, type LockPage, type PageRequest } from './lock-page';

export interface BackendState {
  /** New grants can be made now (health SERVING). */
  serving: boolean;
  /** Redis answers (for Redlock: a majority of its masters). */
  redisReachable: boolean;
  /** Why new grants are held back (the failover quarantine), or null. */
  quarantine: string | null;
}

export interface OverviewSource {
  engine: LockBackend;
  grants: GrantRate;
  backendState(): BackendState;
}

export interface Overview {
  backend: BackendState;
  /** Grants this server made in each of the last seconds, oldest first. */
  grantsPerSecond: number[];
  page: LockPage;
  /** Why the page could not be read (Redis unreachable), or null. */
  error: string | null;
}

export async function readOverview(source: OverviewSource, request: PageRequest, seconds: number): Promise<Overview> {
  const grantsPerSecond = source.grants.series().slice(-seconds);
  const backend = source.backendState();
  try {
    const page = await readLockPage(source.engine, request);
    return { backend, grantsPerSecond, page, error: null };
  } catch (err) {
    return { backend, grantsPerSecond, page: { locks: [], next: '0', listable: true }, error: (err as Error).message };
  }
}
