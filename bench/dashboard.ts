// Benchmark of issue 13's dashboard: how fast a page gets its first overview and what one open
// page costs the server, with 100 locks (the baseline) and then 10 000, in one run on one server.
//
//   node bench/dist/bench/dashboard.js [--locks=10000] [--baseline=100] [--samples=20] [--seconds=10]
// (or HOLDFAST_BENCH_LOCKS, _BASELINE, _SAMPLES, _SECONDS)
import { freePort } from '../src/redis/embedded';
import { grantMany } from '../test/support/many-locks';
import { cpuSeconds, fixed, machineNote, markdownTable, nowMs, quantile, setting, startBenchRedis, startHoldfast, writeResult } from './support';

const LOCKS = setting('locks', 'HOLDFAST_BENCH_LOCKS', 10_000);
const BASELINE = setting('baseline', 'HOLDFAST_BENCH_BASELINE', 100);
const SAMPLES = setting('samples', 'HOLDFAST_BENCH_SAMPLES', 20);
const SECONDS = setting('seconds', 'HOLDFAST_BENCH_SECONDS', 10);
const TTL_MS = 600_000;

/** Opens /events?query and resolves each overview as it arrives, until `stop` returns true. */
async function readEvents(url: string, onEvent: (bytes: number) => boolean): Promise<void> {
  const res = await fetch(url);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffered += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      if (onEvent(Buffer.byteLength(event))) {
        await reader.cancel();
        return;
      }
    }
  }
}

interface Row {
  locks: number;
  query: string;
  firstP50: number;
  firstP95: number;
  eventsPerSecond: number;
  eventKiB: number;
  cpuPercent: number;
}

async function measure(base: string, pid: number, locks: number, label: string, query: string): Promise<Row> {
  const first: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const started = nowMs();
    await readEvents(`${base}/events?${query}`, () => true);
    first.push(nowMs() - started);
  }
  let events = 0;
  let bytes = 0;
  const cpuBefore = cpuSeconds(pid);
  const until = nowMs() + SECONDS * 1000;
  await readEvents(`${base}/events?${query}`, (size) => {
    events++;
    bytes += size;
    return nowMs() >= until;
  });
  const cpu = cpuSeconds(pid) - cpuBefore;
  return {
    locks,
    query: label,
    firstP50: quantile(first, 0.5),
    firstP95: quantile(first, 0.95),
    eventsPerSecond: events / SECONDS,
    eventKiB: bytes / events / 1024,
    cpuPercent: (100 * cpu) / SECONDS,
  };
}

async function main(): Promise<void> {
  const note = machineNote();
  const redis = await startBenchRedis();
  const httpPort = await freePort();
  const server = await startHoldfast(redis.url, ['--http-listen', `127.0.0.1:${httpPort}`]);
  const base = `http://127.0.0.1:${httpPort}`;
  const rows: Row[] = [];
  try {
    const names = Array.from({ length: LOCKS }, (_, i) => `bench/${String(i).padStart(6, '0')}`);
    await grantMany(redis.client, names.slice(0, BASELINE), 'bench', TTL_MS);
    rows.push(await measure(base, server.pid, BASELINE, 'first page', ''));
    await grantMany(redis.client, names.slice(BASELINE), 'bench', TTL_MS);
    rows.push(await measure(base, server.pid, LOCKS, 'first page', ''));
    rows.push(await measure(base, server.pid, LOCKS, 'one lock by name', `prefix=${encodeURIComponent(names[LOCKS - 1])}`));
  } finally {
    await server.stop();
    await redis.cleanup();
  }
  const [baseline, many] = rows;
  const table = markdownTable(
    ['locks', 'page', 'first overview p50 ms', 'p95 ms', 'overviews/s', 'KiB each', 'server CPU, one page open'],
    rows.map((r) => [String(r.locks), r.query, fixed(r.firstP50), fixed(r.firstP95), fixed(r.eventsPerSecond), fixed(r.eventKiB), `${fixed(r.cpuPercent)} %`]),
  );
  const ratio = `first overview p50, ${LOCKS} locks / ${BASELINE}: ${fixed(many.firstP50 / baseline.firstP50, 2)}x; server CPU: ${fixed(many.cpuPercent / Math.max(baseline.cpuPercent, 0.01), 2)}x`;
  const text = `# Dashboard (npm run bench:dashboard)\n\n${note}; ${SAMPLES} first overviews, then one page open for ${SECONDS} s.\n\n${table}\n\n${ratio}\n`;
  console.log(text);
  console.log(`written to ${writeResult('dashboard.md', text)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
