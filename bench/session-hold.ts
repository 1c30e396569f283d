// Issue 24's and 31's per-lock targets for locks held under a Session: 1 000 and then 10 000 locks
// held with `hold` on one session (100 000 on ten: a session holds at most
// HOLDFAST_BENCH_SESSION_LOCKS, default 10 000, the server's default max-session-locks), a short
// ttl so renewals are frequent. Over a steady window where
// nothing happens but renewals, it measures server + redis-server CPU (/proc) per lock renewal
// (Redis's ZADD count: one per lease renewed), and server memory per held lock: RSS, and JS heap after a forced GC
// (bench/memory-probe.ts). Each count runs on a fresh server and Redis.
//
//   node bench/dist/bench/session-hold.js [--ttl-ms=10000] [--seconds=30] [--settle-ms=4000]
// (or HOLDFAST_BENCH_TTL_MS, _SECONDS, _SETTLE_MS; HOLDFAST_BENCH_LOCKS=1000,10000;
//  HOLDFAST_BENCH_SESSION_LOCKS=10000;
//  HOLDFAST_BENCH_SERVER_NODE_ARGS for profiling flags)
import { randomBytes } from 'node:crypto';
import { SessionRequest, type SessionResponse } from '../gen/holdfast/v1/lock';
import {
  cpuSeconds,
  fixed,
  lockClient,
  machineNote,
  markdownTable,
  memoryProbe,
  nowMs,
  redisInfo,
  report,
  rssKiB,
  setting,
  sleep,
  startBenchRedis,
  startHoldfast,
  type BenchRedis,
  type LiveMemory,
} from './support';

const TTL_MS = setting('ttl-ms', 'HOLDFAST_BENCH_TTL_MS', 10_000);
const SECONDS = setting('seconds', 'HOLDFAST_BENCH_SECONDS', 30);
const SETTLE_MS = setting('settle-ms', 'HOLDFAST_BENCH_SETTLE_MS', 4000);
const COUNTS = (process.env.HOLDFAST_BENCH_LOCKS ?? '1000,10000').split(',').map(Number);
const SESSION_LOCKS = setting('session-locks', 'HOLDFAST_BENCH_SESSION_LOCKS', 10_000);
const SERVER_NODE_ARGS = (process.env.HOLDFAST_BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
const CPU_TARGET_US = 15;
const MEMORY_TARGET_KIB = 2;

interface Measured {
  locks: number;
  sessions: number;
  held: number;
  lost: number;
  renewals: number;
  /** Function calls that carried them (one per lease before renew-batch-3). */
  calls: number;
  renewedMessages: number;
  seconds: number;
  serverCpu: number;
  redisCpu: number;
  /** The renew functions' own time, from INFO commandstats: the rest of Redis's CPU is I/O and its event loop. */
  scriptSeconds: number;
  idle: LiveMemory;
  loaded: LiveMemory;
  rssIdleKiB: number;
  rssHeldKiB: number;
}

/**
 * FCALLs run so far (only renewals run in the window), the µs they took, and the leases renewed:
 * each renewal writes its lease once (one ZADD, in renew-3 and renew-batch-3 alike), and one
 * FCALL of renew-batch-3 renews many (INFO commandstats).
 */
async function fcallStats(client: BenchRedis['client']): Promise<{ fcall: number; fcallUs: number; renewed: number }> {
  const stats = await redisInfo(client, 'commandstats');
  const count = (command: string, field: 'calls' | 'usec') => Number(new RegExp(`${field}=(\\d+)`).exec(stats.get(`cmdstat_${command}`) ?? '')?.[1] ?? 0);
  return { fcall: count('fcall', 'calls'), fcallUs: count('fcall', 'usec'), renewed: count('zadd', 'calls') };
}

function log(message: string): void {
  process.stdout.write(`[bench:session-hold] ${message}\n`);
}

/** Sessions that hold `names`, SESSION_LOCKS each at most, counting their answers, `renewed` and `lost` messages. */
async function holdAll(client: ReturnType<typeof lockClient>, names: string[]) {
  const counts = { held: 0, renewed: 0, lost: 0, errors: [] as string[] };
  const sessions: ReturnType<typeof client.client.session>[] = [];
  for (let i = 0; i < names.length; i++) {
    if (i % SESSION_LOCKS === 0) sessions.push(openSession(client, counts));
    sessions[sessions.length - 1].write(SessionRequest.fromPartial({ opId: String(i + 1), hold: { name: names[i], ttlMs: String(TTL_MS) } }));
    // 500 at a time: a busy 2-core machine that takes 10 000 grants at once misses Redis timeouts.
    if ((i + 1) % 500 === 0) await answered(counts, i + 1);
  }
  await answered(counts, names.length);
  return { sessions, counts };
}

function openSession(client: ReturnType<typeof lockClient>, counts: { held: number; renewed: number; lost: number; errors: string[] }) {
  const session = client.client.session();
  session.on('data', (r: SessionResponse) => {
    if (r.hold) counts.held++;
    else if (r.renewed) counts.renewed++;
    else if (r.lost) counts.lost++;
    else if (r.error) counts.errors.push(r.error.message);
  });
  session.on('error', () => {});
  return session;
}

async function answered(counts: { held: number; errors: string[] }, want: number): Promise<void> {
  for (const until = nowMs() + 120_000; counts.held + counts.errors.length < want; await sleep(50)) {
    if (nowMs() > until) throw new Error(`only ${counts.held} of ${want} holds answered in 120 s`);
  }
  if (counts.errors.length) throw new Error(`holds refused: ${counts.errors.slice(0, 3).join('; ')}`);
}

async function measure(locks: number): Promise<Measured> {
  const perSession = Math.min(locks, SESSION_LOCKS);
  const caps = ['--max-session-locks', String(perSession), '--max-holds-per-namespace', String(locks + 100), '--max-session-ops', String(perSession * 2)];
  const probe = memoryProbe();
  const redis = await startBenchRedis();
  const server = await startHoldfast(redis.url, caps, [...probe.nodeArgs, ...SERVER_NODE_ARGS], probe.env);
  const client = lockClient(server.addr);
  try {
    const run = randomBytes(4).toString('hex');
    // Warm up the session code paths, so the idle figure is a running server's, not a fresh one's.
    const warm = await holdAll(
      client,
      Array.from({ length: 100 }, (_, i) => `bench-warm-${run}-${i}`),
    );
    for (const session of warm.sessions) session.end();
    await sleep(SETTLE_MS);
    const idle = await probe.read(server.pid);
    const rssIdleKiB = rssKiB(server.pid);

    const t0 = nowMs();
    const { sessions, counts } = await holdAll(
      client,
      Array.from({ length: locks }, (_, i) => `bench-sh-${run}-${i}`),
    );
    log(`${locks} locks held on ${sessions.length} session(s) in ${fixed((nowMs() - t0) / 1000, 1)} s; settling ${SETTLE_MS} ms`);
    await sleep(Math.max(SETTLE_MS, TTL_MS));

    const sample = async () => ({
      at: nowMs(),
      server: cpuSeconds(server.pid),
      redis: cpuSeconds(redis.pid),
      ...(await fcallStats(redis.client)),
      messages: counts.renewed,
    });
    const before = await sample();
    const rss: number[] = [];
    for (const end = before.at + SECONDS * 1000; nowMs() < end; ) {
      await sleep(Math.min(1000, Math.max(0, end - nowMs())));
      rss.push(rssKiB(server.pid));
    }
    const after = await sample();
    // Outside the window: the forced GC costs CPU and stops the server for a moment.
    const loaded = await probe.read(server.pid);
    log(`memory after GC, idle then held: ${JSON.stringify(idle)} ${JSON.stringify(loaded)}`);
    for (const session of sessions) session.cancel();
    return {
      locks,
      sessions: sessions.length,
      held: counts.held,
      lost: counts.lost,
      renewals: after.renewed - before.renewed,
      calls: after.fcall - before.fcall,
      scriptSeconds: (after.fcallUs - before.fcallUs) / 1e6,
      renewedMessages: after.messages - before.messages,
      seconds: (after.at - before.at) / 1000,
      serverCpu: after.server - before.server,
      redisCpu: after.redis - before.redis,
      idle,
      loaded,
      rssIdleKiB,
      rssHeldKiB: rss.reduce((a, b) => a + b, 0) / rss.length,
    };
  } finally {
    client.close();
    await server.stop();
    await redis.cleanup();
    probe.cleanup();
  }
}

function row(m: Measured): string[] {
  const perRenewalUs = (cpu: number) => (m.renewals > 0 ? (cpu / m.renewals) * 1e6 : NaN);
  const total = perRenewalUs(m.serverCpu + m.redisCpu);
  const heapKiB = (m.loaded.heapUsed - m.idle.heapUsed) / 1024 / m.locks;
  const rssKiBEach = (m.rssHeldKiB - m.rssIdleKiB) / m.locks;
  const verdict = (ok: boolean) => (ok ? 'met' : '**missed**');
  return [
    `${m.locks} (${m.sessions})`,
    `${m.held} / ${m.lost}`,
    `${fixed(m.renewals / m.seconds, 0)} in ${fixed(m.calls / m.seconds, 1)} calls/s (${fixed(m.renewedMessages / m.seconds, 1)} msgs/s)`,
    fixed(perRenewalUs(m.serverCpu), 1),
    `${fixed(perRenewalUs(m.redisCpu), 1)} (${fixed(perRenewalUs(m.scriptSeconds), 1)})`,
    `${fixed(total, 1)} (${verdict(total <= CPU_TARGET_US)})`,
    fixed(heapKiB, 2),
    fixed((m.loaded.rss - m.idle.rss) / 1024 / m.locks, 2),
    // RSS moves by megabytes with the GC's cycle: a held figure below the idle one is that noise.
    `${fixed(rssKiBEach, 2)} (${rssKiBEach < 0 ? 'noise: below idle' : verdict(rssKiBEach <= MEMORY_TARGET_KIB)})`,
  ];
}

async function main(): Promise<void> {
  const machine = machineNote();
  const rows: string[][] = [];
  for (const locks of COUNTS) {
    const m = await measure(locks);
    log(`${locks}: ${JSON.stringify({ ...m, idle: undefined, loaded: undefined, heapIdle: m.idle.heapUsed, heapHeld: m.loaded.heapUsed })}`);
    rows.push(row(m));
    if (m.lost > 0 || m.held < locks) process.exitCode = 1;
  }
  const table = markdownTable(
    [
      'locks held (sessions)',
      'held / lost',
      'renewals/s in function calls/s (session `renewed` messages/s)',
      'server CPU µs per renewal',
      'redis-server CPU µs per renewal (of which the renew function itself)',
      `server + Redis µs per renewal (target ≤ ${CPU_TARGET_US})`,
      'server heap KiB per lock (after GC)',
      'server RSS KiB per lock (after GC)',
      `server RSS KiB per lock (target ≤ ${MEMORY_TARGET_KIB})`,
    ],
    rows,
  );
  const method =
    `Sessions of at most ${SESSION_LOCKS} locks hold N distinct locks (ttl ${TTL_MS} ms: renewed every ~${Math.round(TTL_MS / 3)} ms) on one holdfast server and one redis-server. ` +
    `CPU (user + system, /proc) over ${SECONDS} s of nothing but renewals, divided by the leases Redis renewed (ZADD count: one per renewal; one FCALL may renew many). ` +
    `Memory: server RSS (mean of samples every second) and JS heap after a forced GC, minus the same on the idle server after a warm-up session; per lock.`;
  report('session-hold.md', 'npm run bench:session-hold', 'Locks held under one session', method, machine, table, []);
}

main().catch((err) => {
  process.stderr.write(`bench:session-hold failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
