// One page of the dashboard's lock listing: SCAN steps (bounded) until a page is full, then an
// Inspect of each lock found. Only what Inspect shows leaves here: never a token.
import type { LockBackend } from '../engine/backend';
import type { HolderInfo } from '../engine/types';

export interface PageRequest {
  /** Where the walk goes on from; '0' for the first page. */
  cursor: string;
  /** Only locks whose names start with this. */
  namePrefix: string;
  /** Locks on a page: the walk stops once it has this many (one SCAN step may add up to as many again). */
  size: number;
}

export interface LockView {
  name: string;
  holders: HolderInfo[];
  waiters: number;
  limit: number;
}

export interface LockPage {
  locks: LockView[];
  /** The cursor of the next page; '0' when this page ends the walk. */
  next: string;
  /** False when the backend cannot list its locks (Redlock). */
  listable: boolean;
}

/** SCAN calls one page may take: a keyspace of mostly other keys costs a short page, never a long stall. */
const MAX_SCANS_PER_PAGE = 40;
/** The largest COUNT a step asks for, when matches are sparse (a name prefix that few locks have). */
const MAX_SCAN_COUNT = 2000;

export const MAX_PAGE_SIZE = 500;

export async function readLockPage(backend: LockBackend, request: PageRequest): Promise<LockPage> {
  if (!backend.scanLocks) return { locks: [], next: '0', listable: false };
  const names = new Set<string>();
  let cursor = request.cursor;
  // A step looks at about COUNT keys, so it finds at most COUNT locks; all it found stay on this
  // page, as the cursor has moved past them. COUNT starts at the page size and doubles while
  // steps find few: a page stays near its size, and a rare prefix is found in a few steps.
  let count = request.size;
  for (let scans = 0; scans < MAX_SCANS_PER_PAGE && names.size < request.size; scans++) {
    const step = await backend.scanLocks(cursor, count, request.namePrefix);
    for (const name of step.names) names.add(name);
    cursor = step.cursor;
    if (cursor === '0') break;
    if (step.names.length < request.size / 2) count = Math.min(MAX_SCAN_COUNT, count * 2);
  }
  const infos = await Promise.all([...names].map((name) => backend.inspect(name)));
  const locks = infos
    .filter((info) => info.holders.length > 0 || info.waiters > 0) // freed between the SCAN and the Inspect
    .map(({ name, holders, waiters, limit }) => ({ name, holders, waiters, limit }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { locks, next: cursor, listable: true };
}
