// A real holdfast server as a child process (node dist/src/cli.js serve), on a free loopback
// port, stopped by PID. Ready when it logs that it listens.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from '../../src/redis/embedded';

export interface ServerProcess {
  addr: string;
  port: number;
  pid: number;
  process: ChildProcess;
  /** Lines the server logged so far. */
  logs: string[];
  /** Sends `signal` and resolves with the exit code once the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

export const CLI = join(__dirname, '..', '..', 'dist', 'src', 'cli.js');

export async function startServerProcess(
  redisUrl: string | undefined,
  extraArgs: string[] = [],
  env: NodeJS.ProcessEnv = {},
  /** detached: a process group of its own (with its embedded Redis), to be killed as one; port: reuse one. */
  spawnOptions: { detached?: boolean; port?: number } = {},
): Promise<ServerProcess> {
  const port = spawnOptions.port ?? (await freePort());
  const args = [CLI, 'serve', '--listen', `127.0.0.1:${port}`, '--log-level', 'info', ...extraArgs];
  if (redisUrl) args.push('--redis', redisUrl);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env }, detached: spawnOptions.detached });
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    let buffer = '';
    child.stdout!.on('data', (chunk) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) {
        logs.push(line);
        if (line.includes('holdfast listening')) resolve();
      }
    });
    child.stderr!.on('data', (chunk) => logs.push(chunk.toString()));
    void exited.then((code) => reject(new Error(`server exited with ${code} before listening:\n${logs.join('\n')}`)));
  });
  return {
    addr: `127.0.0.1:${port}`,
    port,
    pid: child.pid!,
    process: child,
    logs,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
  };
}
