// What a Session costs the server (RSS), the figures its caps are chosen from (docs/sessions.md,
// "Caps and back-pressure"): N waiting operations on one session, then N locks held under one
// session, each on a fresh server so that neither inherits the other's heap.
//
//   node bench/dist/bench/session-memory.js [--ops=10000] [--settle-ms=5000]
// (or HOLDFAST_BENCH_OPS, HOLDFAST_BENCH_SETTLE_MS)
import { randomBytes } from 'node:crypto';
import { LockMode, SessionRequest, type SessionResponse } from '../gen/holdfast/v1/lock';
import { fixed, lockClient, machineNote, markdownTable, rssKiB, setting, sleep, startBenchRedis, startHoldfast, writeResult } from './support';

const OPS = setting('ops', 'HOLDFAST_BENCH_OPS', 10_000);
const SETTLE_MS = setting('settle-ms', 'HOLDFAST_BENCH_SETTLE_MS', 5000);
// Room for the measured load, and no more: the caps are what is being sized.
const FLAGS = ['--max-session-waiters', String(OPS), '--max-session-locks', String(OPS), '--max-session-ops', String(OPS * 2)];
const FLAGS_NS = ['--max-waiters-per-namespace', String(OPS), '--max-holds-per-namespace', String(OPS + 1)];

type Load = 'waiting operations' | 'held locks';

async function measure(load: Load): Promise<{ load: Load; beforeKiB: number; afterKiB: number }> {
  const redis = await startBenchRedis();
  const server = await startHoldfast(redis.url, [...FLAGS, ...FLAGS_NS]);
  const client = lockClient(server.addr);
  try {
    const tag = randomBytes(4).toString('hex');
    // Shared waits behind 20 held locks: under the default 1 000 waiters per lock.
    const blocked = Array.from({ length: 20 }, (_, i) => `bench-${tag}-${i}`);
    if (load === 'waiting operations') for (const name of blocked) await client.acquire({ name, ttlMs: '60000' });
    await sleep(SETTLE_MS);
    const beforeKiB = rssKiB(server.pid);
    const session = client.client.session();
    let answered = 0;
    const errors: string[] = [];
    session.on('data', (r: SessionResponse) => void (r.hold ? answered++ : r.error && errors.push(r.error.message)));
    session.on('error', () => {});
    for (let i = 0; i < OPS; i++) {
      const op =
        load === 'waiting operations'
          ? { acquire: { name: blocked[i % blocked.length], mode: LockMode.LOCK_MODE_SHARED, waitTimeoutMs: '60000' } }
          : { hold: { name: `bench-${tag}-h${i}`, ttlMs: '30000' } };
      session.write(SessionRequest.fromPartial({ opId: String(i), ...op }));
    }
    if (load === 'held locks') while (answered + errors.length < OPS) await sleep(100);
    // A refused hold would leave the loop above waiting for ever: say why instead.
    if (errors.length) throw new Error(`${errors.length} holds refused, e.g. ${errors[0]}`);
    await sleep(SETTLE_MS);
    const afterKiB = rssKiB(server.pid);
    session.cancel();
    return { load, beforeKiB, afterKiB };
  } finally {
    client.client.close();
    await server.stop();
    await redis.cleanup();
  }
}

async function main(): Promise<void> {
  const rows = [];
  for (const load of ['waiting operations', 'held locks'] as const) {
    const { beforeKiB, afterKiB } = await measure(load);
    rows.push([load, String(OPS), fixed(beforeKiB / 1024, 1), fixed(afterKiB / 1024, 1), fixed((afterKiB - beforeKiB) / OPS, 1)]);
  }
  const table = markdownTable(['on one session', 'count', 'RSS before (MiB)', 'RSS after (MiB)', 'KiB each'], rows);
  const path = writeResult('session-memory.md', `# Session memory\n\n${machineNote()}\n\n${table}\n`);
  process.stdout.write(`${table}\nwritten to ${path}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : err}\n`);
  process.exit(1);
});
