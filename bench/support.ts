// What every benchmark needs: its own redis-server and holdfast server processes on free
// loopback ports (stopped by PID), process CPU and memory from /proc, Redis INFO counters,
// percentiles, a gRPC client, and markdown output.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import {
  LockServiceClient,
  type AcquireRequest,
  type AcquireResponse,
  type InspectResponse,
  type ReleaseRequest,
  type ReleaseResponse,
} from '../gen/holdfast/v1/lock';
import { startEmbeddedRedis, type EmbeddedRedis } from '../src/redis/embedded';
import { CLI, ROOT } from '../test/support/paths';
import { launchServer } from '../test/support/server';
import { vouchFor } from '../src/redis/vouch';

export { CLI, ROOT };
export const RESULTS = join(ROOT, 'bench', 'results');

/** `--name=value` on the command line, else the environment variable, else the default. */
export function setting(flag: string, env: string, fallback: number): number {
  const prefix = `--${flag}=`;
  const arg = process.argv.find((a) => a.startsWith(prefix));
  const raw = arg ? arg.slice(prefix.length) : process.env[env];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${flag} / ${env}: expected a non-negative number, got "${raw}"`);
  return n;
}

export interface BenchRedis extends EmbeddedRedis {
  client: Redis;
  cleanup(): Promise<void>;
}

/** A private redis-server without snapshots, so a save never lands inside a measurement. */
export async function startBenchRedis(): Promise<BenchRedis> {
  const dataDir = mkdtempSync(join(tmpdir(), 'holdfast-bench-redis-'));
  const server = await startEmbeddedRedis({ dataDir, args: ['--save', ''] });
  await vouchFor({ url: server.url }); // new to holdfast: no quarantine before the first grant
  const client = new Redis(server.url, { maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  return {
    ...server,
    client,
    async cleanup() {
      client.disconnect();
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface HoldfastProcess {
  addr: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * `node dist/src/cli.js serve` on a free loopback port, with the node flags the `holdfast` bin
 * ships with, so the bench measures the server as shipped; ready once it logs that it listens
 * (test/support/server.ts, the one launcher). Warnings after startup, and lines that are not the
 * JSON log (node's --trace-gc), are worth seeing; the rest of the log is dropped.
 */
export async function startHoldfast(
  redisUrl: string,
  extraArgs: string[] = [],
  nodeArgs: string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<HoldfastProcess> {
  let pid = 0;
  const server = await launchServer({
    redisUrl, // '' when extraArgs name the backend (--redlock)
    args: extraArgs,
    nodeArgs,
    env,
    asShipped: true,
    keepLogs: false,
    onSpawn: (child) => (pid = child.pid!),
    onLine: (line, listening) => {
      if (listening && line && (!line.startsWith('{') || /"level":(40|50|60)/.test(line))) process.stderr.write(`[holdfast ${pid}] ${line}\n`);
    },
    onStderr: (chunk) => process.stderr.write(`[holdfast ${pid}] ${chunk}`),
  });
  return { addr: server.addr, pid: server.pid, stop: async () => void (await server.stop('SIGTERM', 12_000)) };
}

/** SIGTERM, then SIGKILL if it has not exited after `forceMs`. */
export async function stopChild(child: ChildProcess, exited: Promise<void>, forceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), forceMs);
  await exited;
  clearTimeout(force);
}

const CLOCK_TICKS_PER_SECOND = 100;

/** User + system CPU seconds a process has used so far (/proc/PID/stat fields 14 and 15). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/** Resident set size in KiB (/proc/PID/status VmRSS). */
export function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]);
}

/** Redis INFO as field -> value for the given section. */
export async function redisInfo(client: Redis, section: string): Promise<Map<string, string>> {
  const text = await client.info(section);
  const fields = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

/** Calls per command from INFO commandstats ("cmdstat_fcall" -> calls). */
export async function commandCalls(client: Redis): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const [field, value] of await redisInfo(client, 'commandstats')) {
    const m = /^calls=(\d+)/.exec(value);
    if (field.startsWith('cmdstat_') && m) calls.set(field.slice('cmdstat_'.length), Number(m[1]));
  }
  return calls;
}

export interface RedisCounters {
  commands: number;
  cpu: number;
  calls: Map<string, number>;
}

/** Commands processed and CPU seconds used by redis-server so far. */
export async function redisCounters(client: Redis): Promise<RedisCounters> {
  const stats = await redisInfo(client, 'stats');
  const cpu = await redisInfo(client, 'cpu');
  return {
    commands: Number(stats.get('total_commands_processed')),
    cpu: Number(cpu.get('used_cpu_user')) + Number(cpu.get('used_cpu_sys')),
    calls: await commandCalls(client),
  };
}

/** The q-quantile (0..1) of a list of numbers, nearest rank. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export function fixed(n: number, digits = 1): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '-';
}

export function markdownTable(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

export function writeResult(file: string, text: string): string {
  mkdirSync(RESULTS, { recursive: true });
  const path = join(RESULTS, file);
  writeFileSync(path, text.endsWith('\n') ? text : `${text}\n`);
  return path;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Milliseconds on the machine-wide monotonic clock: comparable between processes. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export function machineNote(): string {
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  return `Node ${process.version}, ${
    readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('processor')).length
  } cores, load average before the run ${load}`;
}

/** A LockService client with its own connection (no subchannel shared with other clients). */
export function lockClient(addr: string) {
  const client = new LockServiceClient(addr, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
  const unary =
    <Req, Res>(method: (req: Req, md: Metadata, opts: { deadline: number }, cb: (err: ServiceError | null, res: Res) => void) => unknown) =>
    (req: Req, deadlineMs = 60_000): Promise<Res> =>
      new Promise((resolve, reject) =>
        method.call(client, req, new Metadata(), { deadline: Date.now() + deadlineMs }, (err, res) => (err ? reject(err) : resolve(res))),
      );
  const acquire = unary<AcquireRequest, AcquireResponse>(client.acquire as never);
  const release = unary<ReleaseRequest, ReleaseResponse>(client.release as never);
  return {
    client,
    acquire: (req: Partial<AcquireRequest>, deadlineMs?: number) =>
      acquire({ name: '', owner: '', ttlMs: '0', waitTimeoutMs: '0', mode: 0, limit: 0, requestId: '', value: '', ...req }, deadlineMs),
    // Every field filled in: ts-proto would send a missing hold_id as the string "undefined".
    release: (req: { name: string; token: string }, deadlineMs?: number) => release({ holdId: '', ...req }, deadlineMs),
    inspect: unary<{ name: string }, InspectResponse>(client.inspect as never),
    close: () => client.close(),
  };
}

export type LockClient = ReturnType<typeof lockClient>;

export interface FloorProcess {
  addr: string;
  pid: number;
  stop(): Promise<void>;
}

/** The gRPC floor server (bench/floor-server.ts) in its own process, on a free loopback port. */
export async function startFloor(): Promise<FloorProcess> {
  const child: ChildProcess = spawn(process.execPath, [join(__dirname, 'floor-server.js')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const m = /floor listening (\d+)/.exec(output);
      if (m) resolve(Number(m[1]));
    });
    void exited.then(() => reject(new Error(`the floor server exited before listening: ${output}`)));
  });
  return { addr: `127.0.0.1:${port}`, pid: child.pid!, stop: () => stopChild(child, exited, 5000) };
}

/** A benchmark's markdown report: title, what it measures, the machine, the table and notes; printed and written to bench/results/<file>. */
export function report(file: string, command: string, title: string, method: string, machine: string, table: string, notes: string[]): void {
  const text = [
    `# ${title}`,
    '',
    method,
    '',
    `Machine: ${machine}. Shared with other work, so absolute figures are noisy; compare the ratios measured in the same run. Produced by \`${command}\` on ${new Date().toISOString().slice(0, 10)}.`,
    '',
    table,
    ...(notes.length ? ['', ...notes.map((n) => `- ${n}`)] : []),
    '',
  ].join('\n');
  process.stdout.write(`\n${text}\n`);
  process.stdout.write(`[${command}] written to ${writeResult(file, text)}\n`);
}

/** The median of a list of numbers (NaN when empty). */
export function median(values: number[]): number {
  return quantile(values, 0.5);
}

/** Acquire round-trip times (ms) of `pairs` uncontended acquires on `name`, each then released; refused ones are counted. */
export async function acquireLatencies(client: LockClient, name: string, pairs: number, refused = { count: 0 }): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < pairs; i++) {
    const t0 = nowMs();
    const grant = await client.acquire({ name, ttlMs: '5000' });
    out.push(nowMs() - t0);
    if (grant.acquired) await client.release({ name, token: grant.token });
    else refused.count++;
  }
  return out;
}

/** Acquire+release pairs completed in `seconds` by one worker per client, each on its own lock. */
export async function uncontendedPairs(clients: LockClient[], prefix: string, seconds: number, refused = { count: 0 }): Promise<number> {
  const until = nowMs() + seconds * 1000;
  let pairs = 0;
  await Promise.all(
    clients.map(async (client, i) => {
      const name = `${prefix}-${i}`;
      while (nowMs() < until) {
        const grant = await client.acquire({ name, ttlMs: '5000' });
        if (!grant.acquired) {
          refused.count++;
          continue;
        }
        await client.release({ name, token: grant.token });
        pairs++;
      }
    }),
  );
  return pairs;
}

export interface LiveMemory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  /** Committed bytes per V8 heap space. */
  spaces: Record<string, number>;
}

/**
 * A server's memory after a forced GC (bench/memory-probe.ts, preloaded): pass `nodeArgs` and
 * `env` to startHoldfast, then `read(pid)` signals it and waits for its answer. Bytes.
 */
export function memoryProbe() {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-bench-memory-'));
  const file = join(dir, 'memory.json');
  let seen = 0;
  return {
    nodeArgs: ['--expose-gc', '--require', join(__dirname, 'memory-probe.js')],
    env: { HOLDFAST_BENCH_MEMORY_FILE: file },
    async read(pid: number): Promise<LiveMemory> {
      process.kill(pid, 'SIGUSR2');
      for (const until = nowMs() + 30_000; nowMs() < until; await sleep(50)) {
        let answer: LiveMemory & { seq: number };
        try {
          answer = JSON.parse(readFileSync(file, 'utf8'));
        } catch {
          continue; // not written yet, or half written
        }
        if (answer.seq > seen) {
          seen = answer.seq;
          return answer;
        }
      }
      throw new Error(`server ${pid} did not report its memory within 30 s (is bench/memory-probe.js preloaded?)`);
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
