// Benchmark of issue 3: N concurrent Hold streams on one holdfast server against one Redis.
// Reports the Redis commands spent on renewals, the server's CPU and RSS per held stream,
// whether any lease was lost, and cancel-to-free latency (Hold cancelled -> queued waiter granted).
//
//   node bench/dist/bench/hold.js [--holds=10000] [--seconds=60] [--ttl-ms=30000] [--clients=4]
//                                 [--channels=4] [--sample=200]
// (or HOLDFAST_BENCH_HOLDS, _SECONDS, _TTL_MS, _CLIENTS, _CHANNELS, _SAMPLE)
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { OpenResult, SampleResult, WorkerCommand, WorkerStats } from './hold-worker';
import {
  cpuSeconds,
  fixed,
  machineNote,
  markdownTable,
  nowMs,
  quantile,
  redisCounters,
  rssKiB,
  setting,
  sleep,
  startBenchRedis,
  startHoldfast,
  writeResult,
  type RedisCounters,
} from './support';

const HOLDS = setting('holds', 'HOLDFAST_BENCH_HOLDS', 10_000);
const SECONDS = setting('seconds', 'HOLDFAST_BENCH_SECONDS', 60);
const TTL_MS = setting('ttl-ms', 'HOLDFAST_BENCH_TTL_MS', 30_000);
const CLIENTS = Math.max(1, setting('clients', 'HOLDFAST_BENCH_CLIENTS', 4));
const CHANNELS = Math.max(1, setting('channels', 'HOLDFAST_BENCH_CHANNELS', 4));
const SAMPLE = Math.min(HOLDS, setting('sample', 'HOLDFAST_BENCH_SAMPLE', 200));
/** Extra node flags for the server process, e.g. "--heapsnapshot-signal=SIGUSR2" to profile it. */
const SERVER_NODE_ARGS = (process.env.HOLDFAST_BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);

interface Worker {
  child: ChildProcess;
  names: string[];
  ask<T>(command: WorkerCommand, answer: string): Promise<T>;
}

function startWorker(): Worker {
  const child = fork(join(__dirname, 'hold-worker.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map<string, (message: { type: string }) => void>();
  child.on('message', (message: { type: string }) => waiting.get(message.type)?.(message));
  return {
    child,
    names: [],
    ask<T>(command: WorkerCommand, answer: string) {
      return new Promise<T>((resolve, reject) => {
        const onExit = () => reject(new Error(`hold worker ${child.pid} exited while asked to ${command.type}`));
        child.once('exit', onExit);
        waiting.set(answer, (message) => {
          waiting.delete(answer);
          child.off('exit', onExit);
          resolve(message as T);
        });
        child.send(command);
      });
    },
  };
}

function split<T>(items: T[], parts: number): T[][] {
  return Array.from({ length: parts }, (_, p) => items.filter((_, i) => i % parts === p));
}

async function allStats(workers: Worker[]): Promise<WorkerStats> {
  const parts = await Promise.all(workers.map((w) => w.ask<{ stats: WorkerStats }>({ type: 'stats' }, 'stats')));
  return parts.reduce<WorkerStats>(
    (sum, { stats }) => ({
      alive: sum.alive + stats.alive,
      renewed: sum.renewed + stats.renewed,
      lost: sum.lost + stats.lost,
      lostReasons: [...sum.lostReasons, ...stats.lostReasons],
      unexpectedEnds: sum.unexpectedEnds + stats.unexpectedEnds,
      endDetails: [...sum.endDetails, ...stats.endDetails],
    }),
    { alive: 0, renewed: 0, lost: 0, lostReasons: [], unexpectedEnds: 0, endDetails: [] },
  );
}

function log(message: string): void {
  process.stdout.write(`[bench:hold] ${message}\n`);
}

async function main(): Promise<void> {
  const machine = machineNote();
  log(`${HOLDS} holds, ttl ${TTL_MS} ms, ${SECONDS} s, ${CLIENTS} client processes x ${CHANNELS} channels, sample ${SAMPLE}`);
  const redis = await startBenchRedis();
  const server = await startHoldfast(redis.url, [], SERVER_NODE_ARGS);
  const workers = Array.from({ length: CLIENTS }, startWorker);
  try {
    await Promise.all(workers.map((w) => w.ask({ type: 'init', addr: server.addr, channels: CHANNELS }, 'ready')));
    const run = randomBytes(4).toString('hex');

    // Warm up connections and code paths, so the idle figure is a running server's, not a fresh one's.
    const warm = Array.from({ length: 50 * CLIENTS }, (_, i) => `bench-warm-${run}-${i}`);
    await Promise.all(split(warm, CLIENTS).map((names, i) => workers[i].ask({ type: 'open', names, ttlMs: TTL_MS, concurrency: 50 }, 'opened')));
    await Promise.all(split(warm, CLIENTS).map((names, i) => workers[i].ask({ type: 'cancel', names }, 'cancelled')));
    await sleep(3000);
    const rssIdle = rssKiB(server.pid);
    log(`server pid ${server.pid}, redis-server pid ${redis.pid}; server RSS idle: ${rssIdle} KiB`);

    const names = Array.from({ length: HOLDS }, (_, i) => `bench-hold-${run}-${i}`);
    split(names, CLIENTS).forEach((part, i) => (workers[i].names = part));
    const openStart = nowMs();
    const opened = await Promise.all(
      workers.map((w) => w.ask<{ result: OpenResult }>({ type: 'open', names: w.names, ttlMs: TTL_MS, concurrency: 200 }, 'opened')),
    );
    const openSeconds = (nowMs() - openStart) / 1000;
    const acquired = opened.reduce((n, o) => n + o.result.acquired, 0);
    const openFailures = opened.flatMap((o) => o.result.failures);
    log(`opened ${acquired}/${HOLDS} holds in ${fixed(openSeconds, 1)} s${openFailures.length ? `; failures: ${openFailures.join('; ')}` : ''}`);
    await sleep(2000);

    // The measurement window: nothing happens but renewals.
    const before = {
      at: nowMs(),
      cpu: cpuSeconds(server.pid),
      redisCpu: cpuSeconds(redis.pid),
      redis: await redisCounters(redis.client),
      clients: await allStats(workers),
    };
    const rssSamples: number[] = [];
    const windowEnd = before.at + SECONDS * 1000;
    while (nowMs() < windowEnd) {
      await sleep(Math.min(5000, Math.max(0, windowEnd - nowMs())));
      rssSamples.push(rssKiB(server.pid));
      const s = await allStats(workers);
      log(`t+${fixed((nowMs() - before.at) / 1000, 0)} s: ${s.alive} alive, ${s.renewed} renewed events, ${s.lost} lost, RSS ${rssSamples.at(-1)} KiB`);
    }
    const after = {
      at: nowMs(),
      cpu: cpuSeconds(server.pid),
      redisCpu: cpuSeconds(redis.pid),
      redis: await redisCounters(redis.client),
      clients: await allStats(workers),
    };
    // RSS moves with the garbage collector's cycle, so the held figure is the mean of the samples.
    const rssHeld = rssSamples.reduce((a, b) => a + b, 0) / rssSamples.length;

    // Cancel-to-free on a sample of the held locks, while the rest stay held.
    const sampleNames = workers.map((w) => w.names.slice(0, Math.ceil(SAMPLE / CLIENTS)));
    // One sample at a time across all client processes: concurrent samplers would only measure each other.
    const sampled: { result: SampleResult }[] = [];
    for (const [i, w] of workers.entries()) sampled.push(await w.ask<{ result: SampleResult }>({ type: 'sample', names: sampleNames[i] }, 'sampled'));
    const latencies = sampled.flatMap((s) => s.result.latenciesMs);
    const sampleFailures = sampled.flatMap((s) => s.result.failures);
    const final = await allStats(workers);

    await Promise.all(workers.map((w) => w.ask({ type: 'close' }, 'closed')));
    await sleep(3000);
    const rssAfterRelease = rssKiB(server.pid);

    const seconds = (after.at - before.at) / 1000;
    const report = summarize({
      machine,
      acquired,
      openSeconds,
      openFailures,
      seconds,
      before: before.redis,
      after: after.redis,
      serverCpuPerSecond: (after.cpu - before.cpu) / seconds,
      redisCpuPerSecond: (after.redisCpu - before.redisCpu) / seconds,
      renewedEvents: after.clients.renewed - before.clients.renewed,
      rssIdle,
      rssHeld,
      rssPeak: Math.max(...rssSamples),
      rssAfterRelease,
      aliveAtEnd: after.clients.alive,
      final,
      latencies,
      sampleFailures,
    });
    process.stdout.write(`\n${report}\n`);
    log(`written to ${writeResult('hold.md', report)}`);
    if (final.lost > 0 || final.unexpectedEnds > 0 || acquired < HOLDS) process.exitCode = 1;
  } finally {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    await server.stop();
    await redis.cleanup();
  }
}

interface Measured {
  machine: string;
  acquired: number;
  openSeconds: number;
  openFailures: string[];
  seconds: number;
  before: RedisCounters;
  after: RedisCounters;
  serverCpuPerSecond: number;
  redisCpuPerSecond: number;
  renewedEvents: number;
  rssIdle: number;
  rssHeld: number;
  rssPeak: number;
  rssAfterRelease: number;
  aliveAtEnd: number;
  final: WorkerStats;
  latencies: number[];
  sampleFailures: string[];
}

function summarize(m: Measured): string {
  const perSecond = (command: string) => ((m.after.calls.get(command) ?? 0) - (m.before.calls.get(command) ?? 0)) / m.seconds;
  const commandRates = [...m.after.calls.keys()]
    .map((c) => [c, perSecond(c)] as const)
    .filter(([, rate]) => rate > 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([c, rate]) => `${c} ${fixed(rate, 0)}/s`)
    .join(', ');
  const perStreamKiB = (m.rssHeld - m.rssIdle) / Math.max(1, m.acquired);
  const p50 = quantile(m.latencies, 0.5);
  const p99 = quantile(m.latencies, 0.99);
  const verdict = (ok: boolean) => (ok ? 'met' : '**missed**');
  const rows = [
    [
      'held streams',
      `${m.acquired} of ${HOLDS} (opened in ${fixed(m.openSeconds, 1)} s), ${m.aliveAtEnd} alive at the end of the window`,
      '10 000 stable for 60 s',
      verdict(m.acquired === HOLDS && m.aliveAtEnd === HOLDS && SECONDS >= 60 && HOLDS >= 10_000),
    ],
    [
      'leases lost / streams ended unexpectedly',
      `${m.final.lost} / ${m.final.unexpectedEnds}`,
      '0',
      verdict(m.final.lost === 0 && m.final.unexpectedEnds === 0),
    ],
    ['renewal function calls (FCALL) per second', fixed(perSecond('fcall'), 0), `expected ${fixed(HOLDS / (TTL_MS / 3000), 0)} (one per lease per ttl/3)`, ''],
    ['`renewed` events received per second', fixed(m.renewedEvents / m.seconds, 0), '', ''],
    ['Redis commands processed per second (INFO total_commands_processed)', fixed((m.after.commands - m.before.commands) / m.seconds, 0), '', ''],
    ['Redis commandstats per second', commandRates || '-', '', ''],
    ['redis-server CPU', `${fixed(m.redisCpuPerSecond * 1000, 0)} ms/s`, '', ''],
    ['server CPU', `${fixed(m.serverCpuPerSecond * 1000, 0)} ms/s`, '', ''],
    [
      'server RSS idle / held (mean of samples every 5 s) / peak / 3 s after release',
      `${fixed(m.rssIdle / 1024)} / ${fixed(m.rssHeld / 1024)} / ${fixed(m.rssPeak / 1024)} / ${fixed(m.rssAfterRelease / 1024)} MiB`,
      '',
      '',
    ],
    [
      'server RSS per held stream (mean; at peak)',
      `${fixed(perStreamKiB, 1)} KiB; ${fixed((m.rssPeak - m.rssIdle) / Math.max(1, m.acquired), 1)} KiB`,
      '< 16 KiB',
      verdict(perStreamKiB < 16),
    ],
    [
      'cancel-to-free p50 / p99 / max',
      `${fixed(p50, 2)} / ${fixed(p99, 2)} / ${fixed(Math.max(...m.latencies), 2)} ms (n=${m.latencies.length}${m.sampleFailures.length ? `, ${m.sampleFailures.length} failed` : ''})`,
      'p99 < 20 ms',
      verdict(p99 < 20 && m.sampleFailures.length === 0),
    ],
  ];
  const notes = [
    ...m.openFailures.map((f) => `open failure: ${f}`),
    ...m.final.lostReasons.map((r) => `lost: ${r}`),
    ...m.final.endDetails.map((r) => `unexpected end: ${r}`),
    ...m.sampleFailures.slice(0, 10).map((f) => `cancel-to-free sample failure: ${f}`),
  ];
  return [
    '# Hold benchmark',
    '',
    `${HOLDS} Hold streams (distinct locks, ttl ${TTL_MS} ms) on one holdfast server and one redis-server, ` +
      `${CLIENTS} client processes x ${CHANNELS} channels, measured over ${fixed(m.seconds, 1)} s. ` +
      `Cancel-to-free: a waiter queues (Acquire with wait_timeout_ms) on a held lock, the client cancels the Hold stream, ` +
      `time until the waiter's Acquire answers; ${SAMPLE} locks, one at a time, the other holds still open.`,
    '',
    `Machine: ${m.machine}. Shared with other work, so CPU figures are noisy. Produced by \`npm run bench:hold\` on ${new Date().toISOString().slice(0, 10)}.`,
    '',
    markdownTable(['measure', 'measured', 'target', ''], rows),
    ...(notes.length ? ['', ...notes.map((n) => `- ${n}`)] : []),
    '',
  ].join('\n');
}

main().catch((err) => {
  process.stderr.write(`bench:hold failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
