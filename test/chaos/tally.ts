// Counts for the report's tables: anomalies, grants and late storage calls, by fault class and by
// lock kind.
import type { Anomaly } from './anomaly';
import { attribute } from './anomaly';
import { recordsByClient } from './checker';
import type { LockSpec } from './events';
import { claimedSafeUnder, FAULT_CLASSES } from './faults';
import { windowOf } from './history';
import type { ChaosResult } from './run';

export interface Tally {
  faults: number;
  ops: number;
  grants: number;
  unfenced: number;
  fenced: number;
  quiet: number;
  overLimit: number;
  heldAfter: number;
  regressions: number;
  acked: number;
  lost: number;
  duplicated: number;
  outOfOrder: number;
  hung: number;
  leftover: number;
  /** Storage calls that reached the storage after their own lease window: refused by the fence, accepted. */
  lateRefused: number;
  lateAccepted: number;
}

const empty = (): Tally => ({
  faults: 0,
  ops: 0,
  grants: 0,
  unfenced: 0,
  fenced: 0,
  quiet: 0,
  overLimit: 0,
  heldAfter: 0,
  regressions: 0,
  acked: 0,
  lost: 0,
  duplicated: 0,
  outOfOrder: 0,
  hung: 0,
  leftover: 0,
  lateRefused: 0,
  lateAccepted: 0,
});

function countAnomaly(t: Tally, a: Anomaly): void {
  switch (a.check) {
    case 'overlap':
      if (a.fencing === 'unfenced') t.unfenced++;
      else if (a.fencing === 'fenced') t.fenced++;
      else t.quiet++;
      break;
    case 'over-limit':
      t.overLimit++;
      break;
    case 'held-after-grant':
      t.heldAfter++;
      break;
    case 'token-regression':
      t.regressions++;
      break;
    case 'lost-append':
      t.lost++;
      break;
    case 'duplicate-append':
      t.duplicated++;
      break;
    case 'out-of-order':
      t.outOfOrder++;
      break;
    case 'hung-wait':
      t.hung++;
      break;
    case 'leftover':
      t.leftover++;
      break;
  }
}

/** The violations the Done criteria count: everything but fenced and quiet overlaps. */
export function violations(t: Tally): number {
  return t.unfenced + t.overLimit + t.heldAfter + t.regressions + t.lost + t.duplicated + t.outOfOrder + t.hung + t.leftover;
}

/** Tallies keyed by `keyOf` (a fault class, or a lock kind). */
function tallyBy(result: ChaosResult, opKey: (lock: string, t: number) => string, anomalyKey: (a: Anomaly) => string): Map<string, Tally> {
  const tallies = new Map<string, Tally>();
  const at = (key: string) => tallies.get(key) ?? tallies.set(key, empty()).get(key)!;
  const byClient = recordsByClient(result.storage.records);
  for (const op of result.ops) {
    at(opKey(op.lock, op.start)).ops++;
    if (op.grantAt !== undefined) at(opKey(op.lock, op.grantAt)).grants++;
    for (const io of op.ios) if (io.ok && io.item) at(opKey(op.lock, io.t)).acked++;
    const w = windowOf(op);
    for (const r of byClient.get(op.id) ?? []) {
      if (w && r.t <= w.end) continue;
      if (r.ok) at(opKey(op.lock, r.t)).lateAccepted++;
      else at(opKey(op.lock, r.t)).lateRefused++;
    }
  }
  for (const a of result.anomalies) countAnomaly(at(anomalyKey(a)), a);
  return tallies;
}

export function byFault(result: ChaosResult): Map<string, Tally> {
  const tallies = tallyBy(
    result,
    (_, t) => attribute(result.faults, t),
    (a) => a.fault,
  );
  for (const f of result.faults) (tallies.get(f.cls) ?? tallies.set(f.cls, empty()).get(f.cls)!).faults++;
  const order = ['none', ...Object.keys(FAULT_CLASSES), 'after the run'];
  return new Map([...tallies].sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0])));
}

export const KIND_NAMES: Record<LockSpec['type'], string> = { exclusive: 'exclusive', rw: 'read-write', semaphore: 'semaphore (limit 2, 3)' };

export function byKind(result: ChaosResult): Map<string, Tally> {
  const typeOf = new Map(result.locks.map((l) => [l.name, l.type]));
  return tallyBy(
    result,
    (lock) => KIND_NAMES[typeOf.get(lock)!],
    (a) => KIND_NAMES[a.type],
  );
}

/** Sums the tallies of fault classes holdfast claims safety for, and of the time without a fault (all of them with `all`). */
export function claimedSafe(result: ChaosResult, all = false): Tally {
  const sum = empty();
  for (const [key, t] of byFault(result)) {
    if (!all && key !== 'after the run' && !claimedSafeUnder(key, result.options.safe)) continue;
    for (const field of Object.keys(sum) as (keyof Tally)[]) sum[field] += t[field];
  }
  return sum;
}
