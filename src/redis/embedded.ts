// A private redis-server child on a free loopback port: the server's embedded default and the
// test suite's Redis. Started with its own data dir, stopped by PID.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:net';

export interface EmbeddedRedis {
  port: number;
  url: string;
  pid: number;
  dataDir: string;
  process: ChildProcess;
  /**
   * With `durable`: this Redis holds every write it ever acknowledged (its data dir was new, or
   * every write is fsynced before its reply), so no grant made on it can have been lost.
   */
  holdsEveryGrant: boolean;
  stop(): Promise<void>;
}

export interface EmbeddedRedisOptions {
  dataDir: string;
  /** Reuse a port (restart after a kill). Default: a free one. */
  port?: number;
  binary?: string;
  /** Extra redis-server arguments, e.g. ['--appendonly', 'yes']. */
  args?: string[];
  /** Extra environment for the child (tests: a shifted clock). */
  env?: NodeJS.ProcessEnv;
  /** Run as a Sentinel with this config file (it must be writable: Sentinel rewrites it). */
  sentinelConfig?: string;
  /**
   * Keep every acknowledged write across a crash: an append-only file fsynced before each reply
   * (appendfsync always), so a restart on the same data dir has lost no grant (holdfast's default).
   */
  durable?: boolean;
}

/**
 * The embedded default's persistence: fsync before every reply. Measured against everysec in
 * docs/failover.md: it costs a little throughput and spares every restart the quarantine.
 */
const DURABLE_ARGS = ['--appendonly', 'yes', '--appendfsync', 'always', '--save', ''];

/** Whether a data dir holds anything a Redis would load (a new one provably holds no grant). */
function holdsData(dataDir: string): boolean {
  return ['appendonlydir', 'appendonly.aof', 'dump.rdb'].some((f) => existsSync(join(dataDir, f)));
}

/** Whether the Redis that wrote `dataDir` fsynced every write (it says so in a file of ours beside its data). */
const DURABLE_MARK = 'holdfast-durable';

export class RedisBinaryMissing extends Error {}

/** A port nobody listens on right now. (`--port 0` would disable TCP in redis-server.) */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

export function findRedisBinary(binary = 'redis-server'): string {
  const found = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  if (found.error || found.status !== 0) {
    throw new RedisBinaryMissing(`${binary} not found: install it with "sudo apt-get install -y redis-server", or pass --redis URL`);
  }
  return binary;
}

const PIDFILE = 'redis-server.pid';

function isRunningRedis(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('redis-server');
  } catch {
    return false;
  }
}

/**
 * A redis-server left running on this data dir (its parent was SIGKILLed, so it could not stop
 * it) would keep the data dir and its port: stop it first. Its pidfile says which process it is.
 */
async function stopLeftover(dataDir: string): Promise<void> {
  const pidfile = join(dataDir, PIDFILE);
  if (!existsSync(pidfile)) return;
  const pid = Number(readFileSync(pidfile, 'utf8').trim());
  if (!pid || !isRunningRedis(pid)) return;
  process.kill(pid, 'SIGTERM');
  for (let waited = 0; isRunningRedis(pid); waited += 50) {
    if (waited === 5000) process.kill(pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 50)); // not our child: no exit event to wait on
  }
}

export async function startEmbeddedRedis(options: EmbeddedRedisOptions): Promise<EmbeddedRedis> {
  const binary = findRedisBinary(options.binary);
  mkdirSync(options.dataDir, { recursive: true });
  await stopLeftover(options.dataDir);
  // A data dir some older holdfast wrote (RDB snapshots every 60 s) may have lost grants; one
  // that only ever held fsynced appends, or none at all, has not.
  const holdsEveryGrant = !!options.durable && (!holdsData(options.dataDir) || existsSync(join(options.dataDir, DURABLE_MARK)));
  if (options.durable) writeFileSync(join(options.dataDir, DURABLE_MARK), 'appendfsync always\n');
  for (let attempt = 0; ; attempt++) {
    const port = options.port ?? (await freePort());
    const child = spawn(
      binary,
      [
        ...(options.sentinelConfig ? [options.sentinelConfig, '--sentinel'] : []),
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        options.dataDir,
        '--save',
        '60 1',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
        '--pidfile',
        join(options.dataDir, PIDFILE),
        '--loglevel',
        'notice',
        ...(options.durable ? DURABLE_ARGS : []),
        ...(options.args ?? []),
      ],
      { stdio: ['ignore', 'pipe', 'ignore'], env: options.env ? { ...process.env, ...options.env } : undefined },
    );
    let exited = false;
    const exitedPromise = new Promise<void>((resolve) =>
      child.once('exit', () => {
        exited = true;
        resolve();
      }),
    );
    let output = '';
    let collecting = true;
    // redis-server says when it accepts connections; no need to poll it with PING.
    const ready = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 10000);
      child.stdout!.on('data', (d) => {
        if (!collecting) return; // keep draining the pipe
        output = (output + d.toString()).slice(-8192);
        if (/Ready to accept connections|\+monitor master/.test(output)) {
          collecting = false;
          clearTimeout(timer);
          resolve(true);
        }
      });
      void exitedPromise.then(() => {
        clearTimeout(timer);
        resolve(false);
      });
    });
    if (ready) {
      return {
        port,
        url: `redis://127.0.0.1:${port}`,
        pid: child.pid!,
        dataDir: options.dataDir,
        process: child,
        holdsEveryGrant,
        async stop() {
          if (exited) return;
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
          await exitedPromise;
          clearTimeout(timer);
        },
      };
    }
    child.kill('SIGKILL');
    await exitedPromise;
    // Another process may have taken the free port between the probe and the bind.
    if (options.port !== undefined || attempt >= 4) {
      throw new Error(`redis-server did not start on port ${port}: ${output.trim().split('\n').slice(-3).join(' | ')}`);
    }
  }
}
