// The processes a chaos run strikes at: one redis-server with appendonly (fsync always), a TCP
// proxy per replica between it and Redis, the holdfast replicas, the storage service, and the
// client workers, each behind its own proxy to every replica. Every process is stopped by PID.
import { fork, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { launchServer } from '../support/server';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { freePort, startEmbeddedRedis, type EmbeddedRedis } from '../../src/redis/embedded';
import { monoNow, type ClockSample } from './clock';
import type { FromWorker, Kind, WorkerConfig } from './events';
import { CHAOS_DIST } from './paths';

/** Every write is on disk before Redis answers it: a SIGKILL loses nothing that was acknowledged. */
const PERSISTENT = ['--appendonly', 'yes', '--appendfsync', 'always', '--save', ''];

function exitOf(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Sends `signal` to a child that may already be gone. */
function signal(child: ChildProcess | undefined, sig: NodeJS.Signals): void {
  if (child && child.exitCode === null && child.signalCode === null) child.kill(sig);
}

export class RedisNode {
  private server?: EmbeddedRedis;

  constructor(readonly dataDir: string) {}

  async start(port?: number): Promise<void> {
    this.server = await startEmbeddedRedis({ dataDir: this.dataDir, port, args: PERSISTENT });
  }

  get url(): string {
    return this.server!.url;
  }

  signal(sig: NodeJS.Signals): void {
    signal(this.server?.process, sig);
  }

  /** SIGKILL, then start again on the same port: from its appendonly file, or empty when `wipe`. */
  async crashAndRestart(wipe: boolean, downMs: number): Promise<void> {
    const { process: child, port } = this.server!;
    this.signal('SIGKILL');
    await exitOf(child);
    if (wipe) rmSync(join(this.dataDir, 'appendonlydir'), { recursive: true, force: true });
    await new Promise((resolve) => setTimeout(resolve, downMs));
    await this.start(port);
  }

  async stop(): Promise<void> {
    this.signal('SIGCONT');
    await this.server?.stop();
  }
}

export class Replica {
  child?: ChildProcess;
  /** Log lines at level error or above, over all of this replica's lives. */
  readonly errors: string[] = [];

  private constructor(
    readonly index: number,
    readonly port: number,
    /** The proxy between this replica and Redis (none when it finds the master through Sentinel). */
    readonly redisLink: TcpProxy | undefined,
    private readonly args: string[],
  ) {}

  /** A replica on one Redis, through a proxy of its own (`redis` is a URL), or on Sentinel (`redis` is the servers' Sentinel options). */
  static async create(index: number, redis: string | string[], args: string[]): Promise<Replica> {
    const link = typeof redis === 'string' ? await startTcpProxy(redis.replace('redis://', '')) : undefined;
    const redisArgs = link ? ['--redis', `redis://${link.addr}`] : (redis as string[]);
    const replica = new Replica(index, await freePort(), link, [...redisArgs, ...args]);
    await replica.start();
    return replica;
  }

  get addr(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Starts (again) on the same port, with the node flags it ships with; resolves once it listens. */
  async start(): Promise<void> {
    await launchServer({
      port: this.port,
      args: this.args,
      asShipped: true,
      keepLogs: false,
      timeoutMs: 20_000,
      onSpawn: (child) => (this.child = child),
      onLine: (line) => /"level":(50|60)/.test(line) && this.errors.length < 50 && this.errors.push(line.slice(0, 500)),
      onStderr: (chunk) => this.errors.length < 50 && this.errors.push(chunk.slice(0, 500)),
    }).catch((err: Error) => {
      throw new Error(`replica ${this.index}: ${err.message}`);
    });
  }

  signal(sig: NodeJS.Signals): void {
    signal(this.child, sig);
  }

  /** Sends `sig` and waits for the process to end (a SIGTERM is a graceful shutdown, up to 10 s). */
  async end(sig: NodeJS.Signals): Promise<void> {
    if (!this.child) return;
    this.signal('SIGCONT');
    this.signal(sig);
    const force = setTimeout(() => this.signal('SIGKILL'), 12_000);
    await exitOf(this.child);
    clearTimeout(force);
  }

  async close(): Promise<void> {
    await this.end('SIGTERM');
    await this.redisLink?.close();
  }
}

export interface StorageProcess {
  port: number;
  child: ChildProcess;
  clock(): Promise<ClockSample>;
}

/** Asks a child for a clock reading over IPC and brackets it with our own. */
function clockRoundTrip(child: ChildProcess, name: string): Promise<ClockSample> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not answer a clock request`)), 10_000);
    const before = monoNow();
    const onMessage = (message: FromWorker) => {
      if (message.type !== 'clock') return;
      const after = monoNow();
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve({ process: name, before, reading: message.t, after });
    };
    child.on('message', onMessage);
    child.send({ type: 'clock' });
  });
}

export async function startStorage(): Promise<StorageProcess> {
  const child = fork(join(CHAOS_DIST, 'storage.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message: { type: string; port: number }) => resolve(message.port));
    child.once('exit', (code) => reject(new Error(`storage exited with ${code}`)));
  });
  return { port, child, clock: () => clockRoundTrip(child, 'storage') };
}

export type LoopState = Extract<FromWorker, { type: 'state' }>;

/** One client worker's place: its proxies to every replica, and the process in it now. */
export class WorkerSlot {
  child?: ChildProcess;
  id = '';
  generation = -1;
  frozen = false;
  readonly loops = new Map<number, LoopState>();
  /** Ids of the processes that ran here and were killed (their unfinished operations are no hangs). */
  readonly killed: string[] = [];
  /** Ids of processes that exited without being told to. */
  readonly crashed: string[] = [];
  readonly stderr: string[] = [];
  private exited: Promise<void> = Promise.resolve();
  private exitExpected = false;

  private constructor(
    readonly index: number,
    readonly proxies: TcpProxy[],
  ) {}

  static async create(index: number, replicas: Replica[]): Promise<WorkerSlot> {
    return new WorkerSlot(index, await Promise.all(replicas.map((r) => startTcpProxy(r.addr))));
  }

  get alive(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts a new worker process here; resolves with its clock check. */
  async spawn(config: Omit<WorkerConfig, 'id' | 'addrs' | 'logFile'>, logDir: string): Promise<ClockSample> {
    this.generation++;
    this.id = `w${this.index}g${this.generation}`;
    this.loops.clear();
    this.frozen = false;
    this.exitExpected = false;
    const full: WorkerConfig = { ...config, id: this.id, addrs: this.proxies.map((p) => p.addr), logFile: join(logDir, `${this.id}.jsonl`) };
    const child = fork(join(CHAOS_DIST, 'worker.js'), [JSON.stringify(full)], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    this.child = child;
    this.exited = exitOf(child);
    child.stderr!.on('data', (chunk: Buffer) => this.stderr.length < 20 && this.stderr.push(`${this.id}: ${chunk.toString().slice(0, 1000)}`));
    child.on('message', (message: FromWorker) => {
      if (message.type === 'state') this.loops.set(message.loop, message);
    });
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.id} did not start within 30 s: ${this.stderr.join(' ')}`)), 30_000);
      child.on('message', (message: FromWorker) => message.type === 'ready' && (clearTimeout(timer), resolve()));
      child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`${this.id} exited with ${code} before it started: ${this.stderr.join(' ')}`))));
    });
    child.on('error', () => {}); // IPC to a killed process
    child.once('exit', (code, sig) => {
      if (!this.exitExpected) this.crashed.push(`${full.id} (exit ${code ?? sig})`);
    });
    await ready;
    return clockRoundTrip(child, this.id);
  }

  signal(sig: NodeJS.Signals): void {
    signal(this.child, sig);
    if (sig === 'SIGSTOP') this.frozen = true;
    if (sig === 'SIGCONT') this.frozen = false;
  }

  async kill(): Promise<void> {
    this.exitExpected = true;
    this.killed.push(this.id);
    this.signal('SIGKILL');
    await this.exited;
  }

  /** What its loops are doing: true when one holds (or waits for, with 'waiting') a lock, through `api` and as one of `kinds` if given. */
  has(status: 'holding' | 'waiting', api?: 'hold' | 'acquire', kinds?: Kind[]): boolean {
    return [...this.loops.values()].some((l) => l.status === status && (!api || l.api === api) && (!kinds || kinds.includes(l.kind!)));
  }

  /** Asks the worker to finish its operations and exit; kills it after `graceMs`. Resolves true if it stopped by itself. */
  async finish(graceMs: number): Promise<boolean> {
    if (!this.alive) return true;
    this.exitExpected = true;
    this.signal('SIGCONT');
    try {
      this.child!.send({ type: 'stop' });
    } catch {
      // already gone
    }
    const stopped = await Promise.race([this.exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), graceMs))]);
    if (!stopped) {
      this.signal('SIGKILL');
      await this.exited;
    }
    return stopped;
  }

  async close(): Promise<void> {
    if (this.alive) await this.kill();
    await Promise.all(this.proxies.map((p) => p.close()));
  }
}
