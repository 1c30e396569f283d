// The dashboard's picture as text, for `status --watch`: the backend's state, grants per second
// over the last minute, and the page of locks with each lease as a bar.
import type { Overview } from '../overview/overview';
import { lockKind } from './lock-kind';
import { formatTable } from './table';

const SPARK = ' ▁▂▃▄▅▆▇█';
const BAR_WIDTH = 20;
const RATE_SECONDS = 60;

/**
 * Remembers the longest lease left seen for each holder: a bar's full length (Inspect says what
 * is left, not the lease asked for), as the page does.
 */
export class LeaseLengths {
  private full = new Map<string, number>();

  /** The bar's full length for this holder, after seeing `leftMs`; forgets holders not seen in `frame`. */
  track(frame: Set<string>, key: string, leftMs: number): number {
    frame.add(key);
    const full = Math.max(this.full.get(key) ?? 0, leftMs);
    this.full.set(key, full);
    return full;
  }

  forgetAllBut(frame: Set<string>): void {
    for (const key of this.full.keys()) if (!frame.has(key)) this.full.delete(key);
  }
}

export function leaseBar(leftMs: number, fullMs: number): string {
  const filled = fullMs > 0 ? Math.round((BAR_WIDTH * Math.max(0, leftMs)) / fullMs) : 0;
  return `${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)} ${(leftMs / 1000).toFixed(1)}s`;
}

function sparkline(series: number[]): string {
  const peak = Math.max(1, ...series);
  return series.map((v) => SPARK[Math.round((v / peak) * (SPARK.length - 1))]).join('');
}

export function renderOverview(overview: Overview, source: string, lengths: LeaseLengths): string {
  const { backend, page } = overview;
  const rate = overview.grantsPerSecond.slice(-RATE_SECONDS);
  const lines = [
    `holdfast ${source}   ${backend.redisReachable ? 'Redis reachable' : 'REDIS UNREACHABLE'}` +
      (backend.quarantine ? `   quarantine: ${backend.quarantine}` : ''),
    `grants/s ${rate.at(-1) ?? 0}  [${sparkline(rate)}]  last ${RATE_SECONDS} s, peak ${Math.max(0, ...rate)}/s`,
    '',
  ];
  if (overview.error) lines.push(`cannot read the locks: ${overview.error}`, '');
  if (!page.listable) lines.push('this backend (Redlock) cannot list its locks', '');
  const rows = [['LOCK', 'OWNER', 'KIND', 'FENCING', 'LEASE LEFT', 'WAITERS']];
  const frame = new Set<string>();
  for (const lock of page.locks) {
    const waiters = String(lock.waiters);
    if (lock.holders.length === 0) rows.push([lock.name, '-', 'free', '-', '-', waiters]);
    for (const holder of lock.holders) {
      const full = lengths.track(frame, `${lock.name}\u0000${holder.fencingToken}`, holder.ttlMs);
      rows.push([
        lock.name,
        holder.owner || '-',
        lockKind(lock.limit, lock.holders.length, holder.mode === 2),
        holder.fencingToken,
        leaseBar(holder.ttlMs, full),
        waiters,
      ]);
    }
  }
  lengths.forgetAllBut(frame);
  lines.push(formatTable(rows).trimEnd());
  const more = page.next === '0' ? '' : ', more on later pages (narrow with --prefix)';
  lines.push('', `${page.locks.length} lock${page.locks.length === 1 ? '' : 's'} with holders or waiters${more}`);
  return `${lines.join('\n')}\n`;
}
