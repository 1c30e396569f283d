// The chaos report: markdown tables by fault class and by lock kind, history excerpts of the first
// anomalies, and an SVG of grants per second with the faults shaded.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Anomaly } from './anomaly';
import type { Transport } from './events';
import { consistent } from './clock';
import { claimedSafeUnder } from './faults';
import { ROOT } from './paths';
import type { ChaosResult } from './run';
import { byFault, byKind, type Tally } from './tally';

function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

const HEADER = [
  'overlaps unfenced / fenced / quiet',
  'semaphore over limit',
  'held after a conflicting grant',
  'token regressions',
  'appends acked / lost / duplicated / out of order',
  'hung waits',
  'leftover locks',
  'late storage calls refused / accepted',
];

function cells(t: Tally): string[] {
  return [
    `${t.unfenced} / ${t.fenced} / ${t.quiet}`,
    `${t.overLimit}`,
    `${t.heldAfter}`,
    `${t.regressions}`,
    `${t.acked} / ${t.lost} / ${t.duplicated} / ${t.outOfOrder}`,
    `${t.hung}`,
    `${t.leftover}`,
    `${t.lateRefused} / ${t.lateAccepted}`,
  ];
}

export function faultTable(result: ChaosResult): string {
  // A broken configuration keeps none of the claims: the column is for the default one.
  const broken = result.options.releaseOnDisconnect || result.options.careless > 0;
  const rows = [...byFault(result)].map(([cls, t]) => {
    const safe = broken || cls === 'after the run' ? '-' : claimedSafeUnder(cls, result.options.safe) ? 'yes' : '**no**';
    return [cls === 'none' ? 'no fault' : cls, safe, `${t.faults}`, `${t.grants}`, ...cells(t)];
  });
  return table(['fault class', 'claimed safe', 'faults', 'grants', ...HEADER], rows);
}

export function kindTable(result: ChaosResult): string {
  const rows = [...byKind(result)].map(([kind, t]) => [kind, `${t.ops}`, `${t.grants}`, ...cells(t)]);
  return table(['lock kind', 'operations', 'grants', ...HEADER], rows);
}

const rel = (result: ChaosResult, t: number) => ((t - result.t0) / 1000).toFixed(3);

/** The events of the operations an anomaly involves, and their storage calls, in time order. */
export function excerpt(result: ChaosResult, anomaly: Anomaly, maxLines = 24): string {
  const involved = new Set(anomaly.ops);
  const lines: [number, string][] = [];
  for (const op of result.ops) {
    if (!involved.has(op.id)) continue;
    for (const e of op.events) {
      const { e: what, t, op: _id, ...rest } = e as Record<string, unknown> & { e: string; t: number; op: string };
      const fields = Object.entries(rest).map(
        ([k, v]) => `${k}=${typeof v === 'number' && k !== 'server' && k !== 'wait' && k !== 'ttl' ? rel(result, v) : v}`,
      );
      lines.push([t, `${rel(result, t)} s  ${op.id} ${what} ${fields.join(' ')}`]);
    }
  }
  for (const r of result.storage.records) {
    if (involved.has(r.client))
      lines.push([
        r.t,
        `${rel(result, r.t)} s  storage ${r.ok ? 'accepted' : 'REFUSED'} ${r.op} from ${r.client} token ${r.token}${r.dropped ? ` dropping ${r.dropped}` : ''}`,
      ]);
  }
  const from = Math.min(...lines.map((l) => l[0]));
  const to = Math.max(...lines.map((l) => l[0]));
  for (const f of result.faults) {
    if (f.start <= to && f.until >= from)
      lines.push([f.start, `${rel(result, f.start)} s  FAULT ${f.cls} on ${f.targets.join(', ')}, healed at ${rel(result, f.healed)} s`]);
  }
  lines.sort((a, b) => a[0] - b[0]);
  const shown =
    lines.length > maxLines ? [...lines.slice(0, maxLines - 1).map((l) => l[1]), `… ${lines.length - maxLines + 1} more lines`] : lines.map((l) => l[1]);
  return ['```', `${anomaly.check} on ${anomaly.lock} at ${rel(result, anomaly.t)} s (${anomaly.fault}): ${anomaly.detail}`, ...shown, '```'].join('\n');
}

export function clockNote(result: ChaosResult): string {
  const ok = result.clock.filter(consistent).length;
  return `${ok} of ${result.clock.length} cross-process clock readings fell between the orchestrator's readings before and after (CLOCK_MONOTONIC is one clock for every process)`;
}

/** The commit the run was built from, and whether the built sources had changes on top of it. */
export function sourceNote(): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  try {
    const changed = git('status', '--porcelain', '--', 'src', 'lua', 'clients/ts/index').split('\n').filter(Boolean).length;
    return `built from ${git('rev-parse', '--short', 'HEAD')}${changed ? ` with ${changed} uncommitted changes in src/, lua/ or clients/ts/` : ''}`;
  } catch {
    return 'built outside a git checkout';
  }
}

export function machineNote(): string {
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const cores = readFileSync('/proc/cpuinfo', 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('processor')).length;
  return `Node ${process.version}, ${cores} cores, load average ${load}`;
}

/** Grants to operations whose worker's SDK used `transport`. */
export function grantsOver(result: ChaosResult, transport: Transport): number {
  return result.ops.filter((op) => op.transport === transport && op.grantAt !== undefined).length;
}

/** A run's section: settings, both tables, what went wrong in the processes, the first anomalies. */
export function section(result: ChaosResult, title: string, excerpts = 3): string {
  const o = result.options;
  const grants = result.ops.filter((op) => op.grantAt !== undefined).length;
  const seconds = (result.stoppedAt - result.t0) / 1000;
  const notes = [
    `seed ${o.seed}, ${seconds.toFixed(0)} s of workload, ttl ${o.ttlMs} ms, ${o.replicas} replicas, ${o.workers} client processes × ${o.loops} loops, server keepalive ${o.keepaliveMs} + ${o.keepaliveMs} ms${o.serverArgs?.length ? `, \`${o.serverArgs.join(' ')}\`` : ''}${o.releaseOnDisconnect ? ', **--release-on-disconnect**' : ''}${o.careless ? `, **${o.careless} careless clients** (ignore their lease, skip the fence)` : ''}`,
    `${result.ops.length} operations, ${grants} grants (${(grants / seconds).toFixed(1)}/s), ${result.faults.length} faults; ${clockNote(result)}`,
    `grants by the SDK's transport: ${(['session', 'unary'] as const).map((t) => `${t} ${grantsOver(result, t)}`).join(', ')}`,
  ];
  if (result.crashed.length) notes.push(`worker processes that exited by themselves: ${result.crashed.join(', ')}`);
  if (result.serverErrors.length) notes.push(`server error log lines: ${result.serverErrors.length} (first: \`${result.serverErrors[0].slice(0, 200)}\`)`);
  const shown = result.anomalies.filter((a) => a.check !== 'overlap' || a.fencing === 'unfenced').slice(0, excerpts);
  return [
    `## ${title}`,
    '',
    ...notes.map((n) => `- ${n}`),
    '',
    faultTable(result),
    '',
    kindTable(result),
    '',
    ...(shown.length
      ? [
          'First anomalies, with the history of the operations involved (times in s from the start of the workload):',
          '',
          ...shown.map((a) => excerpt(result, a)),
          '',
        ]
      : []),
  ].join('\n');
}

/** What the columns count (README "Guarantees" has the rules in full). */
export const LEGEND = [
  'How to read the tables: an overlap is two lease windows (from when a client learned of its grant to the end of the',
  "SDK's conservative lease, or its giving up or letting go, whichever came first) of one lock that must exclude each",
  'other; unfenced: the storage accepted a call from the older token while the newer holder counted on its lease; fenced:',
  'it refused one; quiet: the older holder made none. Held after a conflicting grant: a window still open when another',
  'client learned of a conflicting grant. Late storage calls: calls that reached the storage after their own window had',
  'ended (a pause between checking the lease and writing); accepted ones came before any newer holder touched the data.',
  'Every row counts what happened while its fault was active or within a lease and 1.5-2.5 s after it healed.',
].join(' ');
