// The one server launcher: a real holdfast server as a child process (node dist/src/cli.js
// serve) on a free loopback port (or a given one), ready once it logs that it listens, stopped by
// PID. Tests, benchmarks (bench/support.ts), the chaos run (test/chaos/cluster.ts) and the
// client tests (launch-cli.ts) all start servers through launchServer().
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { freePort } from '../../src/redis/embedded';
import { CLI } from './paths';

export { CLI };

export interface ServerProcess {
  addr: string;
  port: number;
  pid: number;
  process: ChildProcess;
  /** Lines the server logged so far (with keepLogs false: until it listened). */
  logs: string[];
  /** Sends `signal` (SIGCONT first, for a stopped one) and resolves with the exit code once it has exited; SIGKILL after forceAfterMs. */
  stop(signal?: NodeJS.Signals, forceAfterMs?: number): Promise<number | null>;
  exited: Promise<number | null>;
}

export interface LaunchOptions {
  /** --redis URL; absent or '': the server's embedded Redis, or whatever `args` name (--redlock, --redis-sentinel). */
  redisUrl?: string;
  /** More `serve` flags, after --listen and --log-level info. */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  /** Listen on this port (a restart on the same address); default: a free one. */
  port?: number;
  /** Run with the node flags of the `holdfast` bin's shebang, as shipped (benchmarks, chaos). */
  asShipped?: boolean;
  /** Node flags before the script (--max-old-space-size, --cpu-prof). */
  nodeArgs?: string[];
  /** Another build's CLI (a benchmark comparing two builds); default: this tree's. */
  cli?: string;
  /** A process group of its own (with its embedded Redis), to be killed as one. */
  detached?: boolean;
  /** Keep every log line in `logs` (default); false: only those before it listened. */
  keepLogs?: boolean;
  /** Each stdout line, and whether the server was listening yet. */
  onLine?: (line: string, listening: boolean) => void;
  /** Each stderr chunk (kept in `logs` as well). */
  onStderr?: (chunk: string) => void;
  /** Told of the child as soon as it is spawned (to signal it while it starts). */
  onSpawn?: (child: ChildProcess) => void;
  /** Killed and refused when it has not listened by then (default: the caller's own timeout decides). */
  timeoutMs?: number;
}

/** The node flags the `holdfast` bin runs with (its shebang line). */
export function shippedNodeFlags(cli = CLI): string[] {
  const shebang = readFileSync(cli, 'utf8').split('\n')[0];
  return /node (.*)$/.exec(shebang)?.[1].split(' ').filter(Boolean) ?? [];
}

/** Under --workers (or --optimize-for-size) the primary says so once every worker listens. */
function readyLine(args: string[]): string {
  return args.includes('--workers') || args.includes('--optimize-for-size') ? 'holdfast workers listening' : 'holdfast listening';
}

export async function launchServer(options: LaunchOptions = {}): Promise<ServerProcess> {
  const { args: extraArgs = [], cli = CLI, keepLogs = true, timeoutMs } = options;
  const port = options.port ?? (await freePort());
  const node = [...(options.asShipped ? shippedNodeFlags(cli) : []), ...(options.nodeArgs ?? [])];
  const args = [...node, cli, 'serve', '--listen', `127.0.0.1:${port}`, '--log-level', 'info', ...extraArgs];
  if (options.redisUrl) args.push('--redis', options.redisUrl);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...options.env }, detached: options.detached });
  options.onSpawn?.(child);
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = readyLine(extraArgs);
  let listening = false;
  let heardListening = () => {};
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const line of lines) {
      if (keepLogs || !listening) logs.push(line);
      if (!listening && line.includes(ready)) {
        listening = true;
        heardListening();
      }
      options.onLine?.(line, listening);
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    if (keepLogs || !listening) logs.push(chunk.toString());
    options.onStderr?.(chunk.toString());
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => reject(new Error(`server did not listen within ${timeoutMs} ms:\n${logs.join('\n')}`)), timeoutMs);
      heardListening = () => {
        clearTimeout(timer);
        resolve();
      };
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`server exited with ${code} before listening:\n${logs.join('\n')}`));
      });
    });
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    addr: `127.0.0.1:${port}`,
    port,
    pid: child.pid!,
    process: child,
    logs,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM', forceAfterMs?: number) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGCONT');
      child.kill(signal);
      const force = forceAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), forceAfterMs);
      const code = await exited;
      clearTimeout(force);
      return code;
    },
  };
}

/** launchServer() with the test suite's positional arguments. */
export function startServerProcess(
  redisUrl: string | undefined,
  extraArgs: string[] = [],
  env: NodeJS.ProcessEnv = {},
  /** detached: a process group of its own (with its embedded Redis), to be killed as one; port: reuse one. */
  spawnOptions: { detached?: boolean; port?: number } = {},
): Promise<ServerProcess> {
  return launchServer({ redisUrl, args: extraArgs, env, ...spawnOptions });
}
