// `npm run bench:observability-cost`: what metrics and traces cost per grant. One redis-server and
// four holdfast servers on it: none, --metrics-listen (scraped once a second, as Prometheus would),
// OTLP traces (to a receiver in this process that drops them), and both. Rounds alternate between
// the servers so that load from elsewhere on the machine falls on all of them alike; each figure
// is also given as a ratio to the plain server measured in the same run.
//
// Per server: Acquire latency (one worker, acquire then release on its own lock), acquire+release
// pairs per second with 16 workers on 16 locks, and server CPU per pair.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '../src/redis/embedded';
import {
  acquireLatencies,
  cpuSeconds,
  fixed,
  lockClient,
  machineNote,
  markdownTable,
  quantile,
  setting,
  startBenchRedis,
  startHoldfast,
  uncontendedPairs,
  writeResult,
  type HoldfastProcess,
  type LockClient,
} from './support';

const ROUNDS = setting('rounds', 'HOLDFAST_BENCH_ROUNDS', 3);
const PAIRS = setting('pairs', 'HOLDFAST_BENCH_PAIRS', 1000);
const SECONDS = setting('seconds', 'HOLDFAST_BENCH_SECONDS', 3);
const WORKERS = 16;

interface Variant {
  label: string;
  metrics: boolean;
  traces: boolean;
  server?: HoldfastProcess;
  metricsPort?: number;
  clients: LockClient[];
  latencies: number[];
  rates: number[];
  cpuPerPairUs: number[];
}

async function main(): Promise<void> {
  const note = machineNote();
  const redis = await startBenchRedis();
  let spans = 0;
  const receiver = createServer((req, res) => {
    req.on('data', () => {});
    req.on('end', () => {
      spans++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const otlp = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}` };
  const variants: Variant[] = [
    { label: 'none', metrics: false, traces: false },
    { label: '--metrics-listen', metrics: true, traces: false },
    { label: 'OTLP traces', metrics: false, traces: true },
    { label: 'both', metrics: true, traces: true },
  ].map((v) => ({ ...v, clients: [], latencies: [], rates: [], cpuPerPairUs: [] }));
  const scrapes: NodeJS.Timeout[] = [];
  try {
    for (const v of variants) {
      v.metricsPort = v.metrics ? await freePort() : undefined;
      const args = v.metricsPort ? ['--metrics-listen', `127.0.0.1:${v.metricsPort}`] : [];
      v.server = await startHoldfast(redis.url, args, [], v.traces ? otlp : {});
      v.clients = Array.from({ length: WORKERS }, () => lockClient(v.server!.addr));
      if (v.metricsPort)
        scrapes.push(
          setInterval(
            () =>
              void fetch(`http://127.0.0.1:${v.metricsPort}/metrics`)
                .then((r) => r.text())
                .catch(() => {}),
            1000,
          ),
        );
    }
    for (const v of variants) await acquireLatencies(v.clients[0], `warm-${v.label}`, PAIRS); // JIT warm-up
    for (let round = 0; round < ROUNDS; round++) {
      for (const v of variants) {
        v.latencies.push(...(await acquireLatencies(v.clients[0], `lat-${round}-${v.label}`, PAIRS)));
        const cpu0 = cpuSeconds(v.server!.pid);
        const pairs = await uncontendedPairs(v.clients, `tp-${round}-${v.label}`, SECONDS);
        v.rates.push(pairs / SECONDS);
        v.cpuPerPairUs.push(((cpuSeconds(v.server!.pid) - cpu0) / pairs) * 1e6);
      }
    }
    const base = variants[0];
    const median = (xs: number[]) => quantile(xs, 0.5);
    const rows = variants.map((v) => [
      v.label,
      fixed(quantile(v.latencies, 0.5), 2),
      fixed(quantile(v.latencies, 0.99), 2),
      `${fixed((quantile(v.latencies, 0.5) - quantile(base.latencies, 0.5)) * 1000, 0)} µs`,
      fixed(median(v.rates), 0),
      `${fixed(median(v.rates) / median(base.rates), 2)}x`,
      fixed(median(v.cpuPerPairUs), 0),
      `${fixed(median(v.cpuPerPairUs) / median(base.cpuPerPairUs), 2)}x`,
    ]);
    const text = [
      '# Metrics and traces: cost per grant (`npm run bench:observability-cost`)',
      '',
      `${note}. One redis-server (loopback), ${ROUNDS} alternating rounds; latency over ${ROUNDS * PAIRS} acquires per server, pairs/s and server CPU per pair the median round of ${SECONDS} s with ${WORKERS} workers. /metrics scraped once a second; ${spans} OTLP export requests received.`,
      '',
      markdownTable(
        ['server', 'Acquire p50 (ms)', 'Acquire p99 (ms)', 'p50 added', `pairs/s, ${WORKERS} workers`, 'vs none', 'server CPU µs/pair', 'vs none'],
        rows,
      ),
      '',
    ].join('\n');
    process.stdout.write(text);
    process.stderr.write(`written to ${writeResult('observability-cost.md', text)}\n`);
  } finally {
    scrapes.forEach(clearInterval);
    for (const v of variants) v.clients.forEach((c) => c.close());
    await Promise.all(variants.map((v) => v.server?.stop()));
    await redis.cleanup();
    receiver.close();
  }
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
