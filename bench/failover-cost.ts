// `npm run bench:failover-cost`: what the failover protections cost per grant. One master with
// two replicas (min-replicas-to-write 1), started by this script, and four holdfast servers on
// it: none, --sync-replicas auto, --failover-quarantine, and both; and a fifth server in Redlock
// mode on five more independent masters, also started here. Rounds alternate between the
// servers so that load from elsewhere on the machine falls on all of them alike; each figure is
// also given as a ratio to the unprotected server measured in the same run.
//
// Per server: Acquire latency (one worker, acquire then release on its own lock) and
// acquire+release pairs per second with 16 workers on 16 locks.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startEmbeddedRedis, type EmbeddedRedis } from '../src/redis/embedded';
import {
  acquireLatencies,
  fixed,
  lockClient,
  machineNote,
  markdownTable,
  quantile,
  setting,
  sleep,
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
/** Uncontended acquires that were refused all the same (none expected but under Redlock: a master slower than its node timeout). */
const refused = { count: 0 };
const MAX_TTL_MS = 5000;

interface Variant {
  label: string;
  args: string[];
  /** The Redis the server uses ('' when args name the backend). */
  redisUrl?: string;
  server?: HoldfastProcess;
  clients: LockClient[];
  latencies: number[];
  rates: number[];
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function startGroup(root: string): Promise<EmbeddedRedis[]> {
  const master = await startEmbeddedRedis({
    dataDir: join(root, 'master'),
    args: ['--save', '', '--min-replicas-to-write', '1', '--repl-diskless-sync-delay', '0'],
  });
  const replicas = await Promise.all(
    [1, 2].map((i) => startEmbeddedRedis({ dataDir: join(root, `replica-${i}`), args: ['--save', '', '--replicaof', '127.0.0.1', String(master.port)] })),
  );
  const client = new Redis(master.url);
  await waitUntil('two replicas online', async () => (String(await client.info('replication')).match(/state=online/g) ?? []).length === 2);
  client.disconnect();
  return [master, ...replicas];
}

async function main(): Promise<void> {
  const note = machineNote();
  const root = mkdtempSync(join(tmpdir(), 'holdfast-bench-failover-'));
  const nodes = await startGroup(root);
  const masters = await Promise.all([0, 1, 2, 3, 4].map((i) => startEmbeddedRedis({ dataDir: join(root, `redlock-${i}`), args: ['--save', ''] })));
  nodes.push(...masters);
  const quarantine = ['--failover-quarantine', '--max-ttl-ms', String(MAX_TTL_MS), '--quarantine-margin-ms', '500', '--default-ttl-ms', '5000'];
  const variants: Variant[] = [
    { label: 'none', args: [], clients: [], latencies: [], rates: [] },
    { label: '--sync-replicas auto', args: ['--sync-replicas', 'auto'], clients: [], latencies: [], rates: [] },
    { label: '--failover-quarantine', args: quarantine, clients: [], latencies: [], rates: [] },
    { label: 'both', args: ['--sync-replicas', 'auto', ...quarantine], clients: [], latencies: [], rates: [] },
    {
      label: 'Redlock, 5 masters',
      args: ['--redlock', masters.map((m) => m.url).join(','), '--max-ttl-ms', String(MAX_TTL_MS), '--quarantine-margin-ms', '500', '--default-ttl-ms', '5000'],
      redisUrl: '',
      clients: [],
      latencies: [],
      rates: [],
    },
  ];
  try {
    for (const v of variants) {
      v.server = await startHoldfast(v.redisUrl ?? nodes[0].url, v.args);
      v.clients = Array.from({ length: WORKERS }, () => lockClient(v.server!.addr));
    }
    // A new deployment quarantines once at start: wait until every server grants.
    for (const v of variants) {
      await waitUntil(`${v.label} to grant`, async () => {
        const grant = await v.clients[0].acquire({ name: `warm-${v.label}`, ttlMs: '1000' });
        if (grant.acquired) await v.clients[0].release({ name: `warm-${v.label}`, token: grant.token });
        return grant.acquired;
      });
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const v of variants) {
        v.latencies.push(...(await acquireLatencies(v.clients[0], `lat-${round}-${v.label}`, PAIRS, refused)));
        v.rates.push((await uncontendedPairs(v.clients, `tp-${round}-${v.label}`, SECONDS, refused)) / SECONDS);
      }
    }
    const base = variants[0];
    const median = (xs: number[]) => quantile(xs, 0.5);
    const rows = variants.map((v) => [
      v.label,
      fixed(quantile(v.latencies, 0.5), 2),
      fixed(quantile(v.latencies, 0.99), 2),
      `+${fixed((quantile(v.latencies, 0.5) - quantile(base.latencies, 0.5)) * 1000, 0)} µs`,
      fixed(median(v.rates), 0),
      `${fixed(median(v.rates) / median(base.rates), 2)}x`,
    ]);
    const text = [
      '# Failover protections: cost per grant (`npm run bench:failover-cost`)',
      '',
      `${note}. One master, two replicas (loopback), ${ROUNDS} alternating rounds; latency over ${ROUNDS * PAIRS} acquires per server, pairs/s the median round of ${SECONDS} s with ${WORKERS} workers.`,
      '',
      `Uncontended acquires refused (Redlock: a master slower than its node timeout): ${refused.count}.`,
      '',
      markdownTable(['protection', 'Acquire p50 (ms)', 'Acquire p99 (ms)', 'p50 added', `pairs/s, ${WORKERS} workers`, 'vs none'], rows),
      '',
    ].join('\n');
    process.stdout.write(text);
    process.stderr.write(`written to ${writeResult('failover-cost.md', text)}\n`);
  } finally {
    for (const v of variants) v.clients.forEach((c) => c.close());
    await Promise.all(variants.map((v) => v.server?.stop()));
    await Promise.all(nodes.map((n) => n.stop()));
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
