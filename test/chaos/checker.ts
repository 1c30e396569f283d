// The checker: reads the history (history.ts), what the storage service accepted, the faults and
// what Inspect said after the run, and reports each anomaly with the fault active when it happened.
// Every time is on one monotonic clock (clock.ts).
import { attribute, type Anomaly, type CheckInput, type Fencing } from './anomaly';
import type { LockSpec, StorageRecord } from './events';
import { windowOf, type Op, type Window } from './history';
import { checkLockSet } from './lock-set';

export interface Granted {
  op: Op;
  w: Window;
}

export function recordsByClient(records: StorageRecord[]): Map<string, StorageRecord[]> {
  const by = new Map<string, StorageRecord[]>();
  for (const r of records) {
    const list = by.get(r.client);
    if (list) list.push(r);
    else by.set(r.client, [r]);
  }
  return by;
}

function grantedOf(ops: Op[]): Granted[] {
  return ops
    .flatMap((op) => {
      const w = windowOf(op);
      return w ? [{ op, w }] : [];
    })
    .sort((a, b) => a.w.start - b.w.start);
}

/**
 * An overlap is unfenced when the storage service accepted a call from the older grant (lower
 * fencing token) while the newer holder counted on its lease; fenced when it accepted none then
 * and refused one from the older grant after the newer one began; quiet when the older grant
 * made no storage call from then on.
 */
function overlapFencing(older: Op, newer: Window, byClient: Map<string, StorageRecord[]>): Fencing {
  const calls = (byClient.get(older.id) ?? []).filter((r) => r.t >= newer.start);
  if (calls.some((r) => r.ok && r.t <= newer.end)) return 'unfenced';
  return calls.some((r) => !r.ok) ? 'fenced' : 'quiet';
}

/** Exclusive locks and read-write locks: two windows that overlap where one of them is exclusive. */
function checkOverlaps(lock: LockSpec, granted: Granted[], input: CheckInput, byClient: Map<string, StorageRecord[]>): Anomaly[] {
  const anomalies: Anomaly[] = [];
  const heldAfter = new Set<string>();
  let active: Granted[] = [];
  for (const next of granted) {
    active = active.filter((a) => a.w.end > next.w.start);
    for (const first of active) {
      if (lock.type === 'rw' && first.op.kind !== 'writer' && next.op.kind !== 'writer') continue;
      const [older, newer] = first.op.token! <= next.op.token! ? [first, next] : [next, first];
      const overlapMs = Math.min(first.w.end, next.w.end) - next.w.start;
      const fault =
        attribute(input.faults, next.w.start) !== 'none' ? attribute(input.faults, next.w.start) : attribute(input.faults, first.w.start, first.w.end);
      const fencing = overlapFencing(older.op, newer.w, byClient);
      const pair = `${first.op.id} (${first.op.kind}, token ${first.op.token}) and ${next.op.id} (${next.op.kind}, token ${next.op.token})`;
      anomalies.push({
        check: 'overlap',
        lock: lock.name,
        type: lock.type,
        t: next.w.start,
        fault,
        ops: [first.op.id, next.op.id],
        fencing,
        overlapMs,
        detail: `${pair} overlap by ${overlapMs.toFixed(1)} ms; storage: ${fencing}`,
      });
      if (!heldAfter.has(first.op.id)) {
        heldAfter.add(first.op.id);
        anomalies.push({
          check: 'held-after-grant',
          lock: lock.name,
          type: lock.type,
          t: next.w.start,
          fault,
          ops: [first.op.id, next.op.id],
          overlapMs,
          detail: `${first.op.id} counted on its lease ${overlapMs.toFixed(1)} ms past the moment ${next.op.id} learned of its grant`,
        });
      }
    }
    active.push(next);
  }
  return anomalies;
}

/** Semaphores: a grant learned of while `limit` other windows were still open. */
function checkOverLimit(lock: LockSpec, granted: Granted[], input: CheckInput, byClient: Map<string, StorageRecord[]>): Anomaly[] {
  const anomalies: Anomaly[] = [];
  let active: Granted[] = [];
  for (const next of granted) {
    active = active.filter((a) => a.w.end > next.w.start);
    if (active.length >= lock.limit) {
      const until = Math.min(next.w.end, ...active.map((a) => a.w.end));
      const involved = [...active, next];
      const wrote = involved.some((g) => (byClient.get(g.op.id) ?? []).some((r) => r.ok && r.t >= next.w.start && r.t <= until));
      const fault = attribute(input.faults, next.w.start);
      const overlapMs = until - next.w.start;
      const ids = involved.map((g) => g.op.id);
      anomalies.push({
        check: 'over-limit',
        lock: lock.name,
        type: lock.type,
        t: next.w.start,
        fault,
        ops: ids,
        fencing: wrote ? 'unfenced' : 'quiet',
        overlapMs,
        detail: `${involved.length} holders of a limit-${lock.limit} semaphore for ${overlapMs.toFixed(1)} ms: ${ids.join(', ')}`,
      });
      anomalies.push({
        check: 'held-after-grant',
        lock: lock.name,
        type: lock.type,
        t: next.w.start,
        fault,
        ops: ids,
        overlapMs,
        detail: `${active.length} leases still counted on when ${next.op.id} learned of its grant (limit ${lock.limit})`,
      });
    }
    active.push(next);
  }
  return anomalies;
}

/**
 * A grant the client learned of before another grant's request was sent was made first, so its
 * fencing token must be lower. Two grants never share a token.
 */
function checkTokens(lock: LockSpec, ops: Op[], input: CheckInput): Anomaly[] {
  const grants = ops.filter((op) => op.token !== undefined && op.grantAt !== undefined);
  const byLearned = [...grants].sort((a, b) => a.grantAt! - b.grantAt!);
  const anomalies: Anomaly[] = [];
  const seen = new Map<bigint, Op>();
  let highest: Op | undefined;
  let i = 0;
  for (const op of grants) {
    const twin = seen.get(op.token!);
    if (twin)
      anomalies.push({
        check: 'token-regression',
        lock: lock.name,
        type: lock.type,
        t: op.grantAt!,
        fault: attribute(input.faults, op.grantAt!),
        ops: [twin.id, op.id],
        detail: `${twin.id} and ${op.id} got the same fencing token ${op.token}`,
      });
    seen.set(op.token!, op);
  }
  for (const op of grants) {
    while (i < byLearned.length && byLearned[i].grantAt! < op.start) {
      if (!highest || byLearned[i].token! > highest.token!) highest = byLearned[i];
      i++;
    }
    if (highest && highest.token! >= op.token!) {
      anomalies.push({
        check: 'token-regression',
        lock: lock.name,
        type: lock.type,
        t: op.grantAt!,
        fault: attribute(input.faults, highest.grantAt!, op.grantAt!),
        ops: [highest.id, op.id],
        detail: `${op.id} asked after ${highest.id} had its grant (token ${highest.token}) but got token ${op.token}`,
      });
    }
  }
  return anomalies;
}

/** Operations that never ended although their process lived on, or were given up on by the client. */
function checkHangs(ops: Op[], input: CheckInput, typeOf: Map<string, LockSpec['type']>): Anomaly[] {
  return ops.flatMap((op): Anomaly[] => {
    const abandoned = op.refused?.why === 'abandoned';
    const pending = op.endAt === undefined && !input.killed.has(op.worker) && input.stuck.has(op.worker);
    if (!abandoned && !pending) return [];
    const detail = abandoned
      ? `${op.id} waited ${op.wait} ms for ${op.lock} and had no answer ${(op.refused!.t - op.start).toFixed(0)} ms later`
      : `${op.id} (${op.api} ${op.lock}) never ended; its process was still running at the end`;
    return [
      {
        check: 'hung-wait',
        lock: op.lock,
        type: typeOf.get(op.lock)!,
        t: op.start,
        fault: attribute(input.faults, op.start, op.start + op.wait),
        ops: [op.id],
        detail,
      },
    ];
  });
}

export function check(input: CheckInput): Anomaly[] {
  const byClient = recordsByClient(input.storage.records);
  const typeOf = new Map(input.locks.map((l) => [l.name, l.type]));
  const anomalies: Anomaly[] = [];
  for (const lock of input.locks) {
    const ops = input.ops.filter((op) => op.lock === lock.name);
    const granted = grantedOf(ops);
    if (lock.type === 'semaphore') anomalies.push(...checkOverLimit(lock, granted, input, byClient));
    else anomalies.push(...checkOverlaps(lock, granted, input, byClient));
    anomalies.push(...checkTokens(lock, ops, input));
  }
  anomalies.push(...checkLockSet(input, typeOf));
  anomalies.push(...checkHangs(input.ops, input, typeOf));
  for (const left of input.leftovers) {
    if (left.holders.length === 0 && left.waiters === 0) continue;
    anomalies.push({
      check: 'leftover',
      lock: left.lock,
      type: typeOf.get(left.lock)!,
      t: input.endAt,
      fault: 'after the run',
      ops: left.holders,
      detail: `${left.lock} still had holders [${left.holders.join(', ')}] and ${left.waiters} waiters after every client had stopped and every lease had run out`,
    });
  }
  return anomalies.sort((a, b) => a.t - b.t);
}
