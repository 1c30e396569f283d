// `npm run bench:embedded-fsync`: what the embedded Redis's `appendfsync always` (holdfast's
// default: no acknowledged grant is lost in a crash, so its restarts need no quarantine) costs
// against `everysec` (up to a second of grants lost in a crash, so every restart would need the
// quarantine). Two redis-servers with an append-only file in their own data dirs, one holdfast
// server on each, started here; rounds alternate between them so that load from elsewhere on the
// machine falls on both alike. Per variant: Acquire latency (one worker) and acquire+release
// pairs per second with 16 workers on 16 locks; ratios to `everysec` from the same run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedRedis, type EmbeddedRedis } from '../src/redis/embedded';
import { vouchFor } from '../src/redis/vouch';
import {
  acquireLatencies,
  fixed,
  lockClient,
  machineNote,
  markdownTable,
  median,
  quantile,
  setting,
  startHoldfast,
  uncontendedPairs,
  writeResult,
  type HoldfastProcess,
  type LockClient,
} from './support';

const ROUNDS = setting('rounds', 'HOLDFAST_BENCH_ROUNDS', 3);
const PAIRS = setting('pairs', 'HOLDFAST_BENCH_PAIRS', 500);
const SECONDS = setting('seconds', 'HOLDFAST_BENCH_SECONDS', 3);
const WORKERS = 16;

interface Variant {
  label: string;
  fsync: 'always' | 'everysec';
  redis?: EmbeddedRedis;
  server?: HoldfastProcess;
  clients: LockClient[];
  latencies: number[];
  rates: number[];
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'holdfast-bench-fsync-'));
  const variants: Variant[] = [
    { label: 'appendfsync always (default)', fsync: 'always', clients: [], latencies: [], rates: [] },
    { label: 'appendfsync everysec', fsync: 'everysec', clients: [], latencies: [], rates: [] },
  ];
  try {
    for (const v of variants) {
      v.redis = await startEmbeddedRedis({ dataDir: join(root, v.fsync), args: ['--appendonly', 'yes', '--appendfsync', v.fsync, '--save', ''] });
      await vouchFor({ url: v.redis.url });
      v.server = await startHoldfast(v.redis.url);
      v.clients = Array.from({ length: WORKERS }, () => lockClient(v.server!.addr));
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const v of variants) {
        v.latencies.push(...(await acquireLatencies(v.clients[0], `fsync-latency-${round}`, PAIRS)));
        v.rates.push((await uncontendedPairs(v.clients, `fsync-${round}`, SECONDS)) / SECONDS);
      }
    }
    const base = variants[1];
    const rows = variants.map((v) => [
      v.label,
      `${fixed(quantile(v.latencies, 0.5), 2)} / ${fixed(quantile(v.latencies, 0.99), 2)} ms`,
      fixed(median(v.rates), 0),
      `${fixed(median(v.rates) / median(base.rates), 2)}x`,
    ]);
    const table = markdownTable(['embedded Redis', 'Acquire p50 / p99', 'pairs/s (16 workers)', 'vs everysec'], rows);
    const text = [
      '# The embedded Redis: appendfsync always against everysec',
      '',
      `\`npm run bench:embedded-fsync\`; ${ROUNDS} alternating rounds, ${PAIRS} acquires for latency and ${SECONDS} s of pairs per round and variant.`,
      '',
      machineNote(),
      '',
      table,
      '',
    ].join('\n');
    process.stdout.write(`${text}\n`);
    process.stderr.write(`written to ${writeResult('embedded-fsync.md', text)}\n`);
  } finally {
    for (const v of variants) {
      v.clients.forEach((c) => c.close());
      await v.server?.stop();
      await v.redis?.stop();
    }
    rmSync(root, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
