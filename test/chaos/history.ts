// The run's history: every worker log read back into one record per operation, with its lease
// window on the monotonic clock.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Kind, Transport, WorkerEvent } from './events';

export interface IoRecord {
  io: 'read' | 'write' | 'append';
  item?: string;
  tCheck: number;
  t: number;
  ok: boolean | null;
  detail?: string;
}

export interface Op {
  id: string;
  /** The worker process (w<slot>g<generation>). */
  worker: string;
  lock: string;
  kind: Kind;
  api: 'hold' | 'acquire';
  transport: Transport;
  wait: number;
  server: number;
  start: number;
  grantAt?: number;
  token?: bigint;
  /** The SDK's last conservative lease end. */
  deadline?: number;
  lostAt?: number;
  lostSource?: string;
  releaseAt?: number;
  endAt?: number;
  refused?: { why: string; t: number; detail: string };
  ios: IoRecord[];
  /** Every event of the operation, for history excerpts. */
  events: WorkerEvent[];
}

export interface Window {
  start: number;
  end: number;
}

/**
 * When the client counted on its grant: from when it learned of it to the earliest of the SDK's
 * conservative lease end, the moment the SDK gave it up, and the moment the client let go.
 * Undefined for an operation that was never granted, or whose grant was late from the start.
 */
export function windowOf(op: Op): Window | undefined {
  if (op.grantAt === undefined || op.deadline === undefined) return undefined;
  const end = Math.min(op.deadline, op.lostAt ?? Infinity, op.releaseAt ?? Infinity);
  return end > op.grantAt ? { start: op.grantAt, end } : undefined;
}

function apply(op: Op, event: WorkerEvent): void {
  op.events.push(event);
  switch (event.e) {
    case 'grant':
      op.grantAt = event.t;
      op.token = BigInt(event.token);
      op.deadline = event.deadline;
      break;
    case 'deadline':
      op.deadline = Math.max(op.deadline ?? -Infinity, event.deadline);
      break;
    case 'lost':
      op.lostAt ??= event.t;
      op.lostSource ??= event.source;
      break;
    case 'refused':
      op.refused = { why: event.why, t: event.t, detail: event.detail };
      break;
    case 'io':
      op.ios.push({ io: event.io, item: event.item, tCheck: event.tCheck, t: event.t, ok: event.ok, detail: event.detail });
      break;
    case 'release':
      op.releaseAt ??= event.t;
      break;
    case 'end':
      op.endAt = event.t;
      break;
  }
}

/** Reads every <worker>.jsonl in `dir`. A line cut short by a SIGKILL is skipped. */
export function readHistory(dir: string): Op[] {
  const ops = new Map<string, Op>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.jsonl'))) {
    const worker = file.slice(0, -'.jsonl'.length);
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (!line) continue;
      let event: WorkerEvent;
      try {
        event = JSON.parse(line) as WorkerEvent;
      } catch {
        continue;
      }
      if (event.e === 'start') {
        const { op: id, lock, kind, api, transport, wait, server, t } = event;
        ops.set(id, { id, worker, lock, kind, api, transport, wait, server, start: t, ios: [], events: [event] });
      } else {
        const op = ops.get(event.op);
        if (op) apply(op, event);
      }
    }
  }
  return [...ops.values()].sort((a, b) => a.start - b.start);
}
