// Jepsen's lock-set, on lists: every append a client saw acknowledged must be in its lock's final
// list exactly once, and the lists of exclusive data must be in fencing-token order. The storage
// service's requests are replayed in the order it took them to tell which write dropped an item.
import type { ListItem, LockSpec, StorageRecord } from './events';
import { attribute, type Anomaly, type CheckInput } from './anomaly';

interface Placed {
  record: StorageRecord;
  /** The accepted write that cut the item off the list, if one did. */
  droppedBy?: StorageRecord;
}

/** Replays the accepted requests: where each item came from and what dropped it. */
function replay(records: StorageRecord[]): Map<string, Placed> {
  const lists = new Map<string, string[]>();
  const placed = new Map<string, Placed>();
  for (const r of records) {
    if (!r.ok || r.op === 'read' || r.item === undefined) continue;
    const list = lists.get(r.lock) ?? [];
    lists.set(r.lock, list);
    if (r.op === 'write') {
      const base = Math.min(r.base ?? list.length, list.length);
      for (const gone of list.splice(base)) {
        const p = placed.get(gone);
        if (p && !p.droppedBy) p.droppedBy = r;
      }
    }
    list.push(r.item);
    placed.set(r.item, { record: r });
  }
  return placed;
}

/**
 * Exclusive data (plain locks; a read-write lock's writers): no item may follow one with a higher
 * token from an exclusive holder, and an exclusive holder's item may not follow any higher token.
 * Semaphore lists have no order: their holders write side by side.
 */
function outOfOrder(list: ListItem[], type: LockSpec['type']): ListItem[] {
  if (type === 'semaphore') return [];
  const wrong: ListItem[] = [];
  let highest = 0n;
  let highestExclusive = 0n;
  for (const entry of list) {
    const token = BigInt(entry.token);
    const exclusive = entry.kind !== 'reader';
    if (token < highestExclusive || (exclusive && token < highest)) wrong.push(entry);
    if (token > highest) highest = token;
    if (exclusive && token > highestExclusive) highestExclusive = token;
  }
  return wrong;
}

export function checkLockSet(input: CheckInput, typeOf: Map<string, LockSpec['type']>): Anomaly[] {
  const placed = replay(input.storage.records);
  const anomalies: Anomaly[] = [];
  const at = (lock: string, check: Anomaly['check'], t: number, ops: string[], detail: string): Anomaly => ({
    check,
    lock,
    type: typeOf.get(lock)!,
    t,
    fault: attribute(input.faults, t),
    ops,
    detail,
  });
  const counts = new Map<string, number>();
  for (const [lock, list] of Object.entries(input.storage.lists)) {
    for (const entry of list) counts.set(entry.item, (counts.get(entry.item) ?? 0) + 1);
    for (const entry of outOfOrder(list, typeOf.get(lock)!)) {
      const t = placed.get(entry.item)?.record.t ?? input.endAt;
      anomalies.push(at(lock, 'out-of-order', t, [entry.client], `${entry.item} (token ${entry.token}) follows a higher token in ${lock}'s list`));
    }
  }
  for (const [item, n] of counts) {
    if (n > 1) {
      const p = placed.get(item);
      anomalies.push(at(p?.record.lock ?? '?', 'duplicate-append', p?.record.t ?? input.endAt, [p?.record.client ?? '?'], `${item} appears ${n} times`));
    }
  }
  for (const op of input.ops) {
    for (const io of op.ios) {
      if (io.ok !== true || !io.item || counts.has(io.item)) continue;
      const by = placed.get(io.item)?.droppedBy;
      const detail = by
        ? `${io.item} was acknowledged, then dropped by ${by.client}'s write (token ${by.token}, base ${by.base})`
        : `${io.item} was acknowledged but is not in the list`;
      anomalies.push(at(op.lock, 'lost-append', by?.t ?? io.t, by ? [op.id, by.client] : [op.id], detail));
    }
  }
  return anomalies;
}
