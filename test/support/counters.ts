// The Prometheus counters that say what happened to calls and locks, read from a real server's
// /metrics, and what moved between two reads. Timings' sums, gauges and the process's own
// series are left out: they move on their own.
const COUNTED =
  /^holdfast_(rpcs_total|grants_total|releases_total|lease_expiries_total|leases_lost_total|limit_refusals_total|redis_errors_total|(acquire|wait|handoff)_duration_seconds_count)(\{|$)/;

export type Counters = Map<string, number>;

/** Every sample of a scrape, keyed by its series as written: name{label="value",...}. */
export async function scrapeSamples(base: string): Promise<Counters> {
  const res = await fetch(`${base}/metrics`);
  if (res.status !== 200) throw new Error(`GET ${base}/metrics answered ${res.status}`);
  const samples: Counters = new Map();
  for (const line of (await res.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

export async function readCounters(base: string): Promise<Counters> {
  const samples = await scrapeSamples(base);
  for (const series of samples.keys()) if (!COUNTED.test(series)) samples.delete(series);
  return samples;
}

/** The series that moved from `before` to `after`, by how much. */
export function moved(before: Counters, after: Counters): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [series, value] of after) {
    const by = value - (before.get(series) ?? 0);
    if (by !== 0) out[series] = by;
  }
  return out;
}

/** True once `now` can no longer become `expected`: a series moved that should not, or moved too far. */
export function overshot(now: Record<string, number>, expected: Record<string, number>): boolean {
  return Object.entries(now).some(([series, by]) => by > (expected[series] ?? 0));
}

export const rpc = (method: string, code: string) => `holdfast_rpcs_total{method="holdfast.v1.LockService/${method}",code="${code}"}`;
export const GRANTS = 'holdfast_grants_total';
export const acquired = (outcome: 'granted' | 'not_granted' | 'error') => `holdfast_acquire_duration_seconds_count{outcome="${outcome}"}`;
export const waited = (outcome: 'granted' | 'not_granted' | 'error') => `holdfast_wait_duration_seconds_count{outcome="${outcome}"}`;
export const HANDOFFS = 'holdfast_handoff_duration_seconds_count';
export const releasedBy = (by: 'holder' | 'vanished') => `holdfast_releases_total{by="${by}"}`;
export const expirySeenBy = (by: 'release' | 'renew' | 'hold') => `holdfast_lease_expiries_total{seen_by="${by}"}`;
