// The real processes behind the fence stores in tests: a redis-server (durable by default:
// appendonly yes, appendfsync always), a private PostgreSQL (test/support/postgres.sh), and a
// holdfast server for the holders. Each starts on free loopback ports and stops by PID.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Pool } from 'pg';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/redis/embedded';
import { startServerProcess, type ServerProcess } from '../support/server';

export const DURABLE_REDIS = ['--appendonly', 'yes', '--appendfsync', 'always', '--save', ''];

export interface FenceRedis {
  url: string;
  client: Redis;
  /** The redis-server's PID (a new one after killAndRestart). */
  pid(): number;
  /** SIGKILLs redis-server (no shutdown save) and starts it on the same port and data dir. */
  killAndRestart(): Promise<void>;
  /** SIGKILLs redis-server by its PID and resolves once it exited. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data dir (after kill). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startFenceRedis(args: string[] = DURABLE_REDIS): Promise<FenceRedis> {
  const dataDir = mkdtempSync(join(tmpdir(), 'holdfast-fence-redis-'));
  let server: EmbeddedRedis = await startEmbeddedRedis({ dataDir, args });
  const client = new Redis(server.url, { maxRetriesPerRequest: 20 });
  client.on('error', () => {});
  const handle: FenceRedis = {
    url: server.url,
    client,
    pid: () => server.process.pid!,
    async killAndRestart() {
      await handle.kill();
      await handle.start();
    },
    async kill() {
      if (server.process.exitCode !== null || server.process.signalCode !== null) return;
      const exited = new Promise((resolve) => server.process.once('exit', resolve));
      signal(server.process.pid!, 'SIGCONT'); // a frozen one too
      signal(server.process.pid!, 'SIGKILL');
      await exited;
    },
    async start() {
      server = await startEmbeddedRedis({ dataDir, port: server.port, args });
    },
    async stop() {
      client.disconnect();
      signal(server.process.pid!, 'SIGCONT'); // a test may have frozen it
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return handle;
}

const POSTGRES_SH = join(__dirname, '..', 'support', 'postgres.sh');

export interface FencePostgres {
  url: string;
  /** The postmaster's PID. */
  pid: number;
  /** The postmaster and its children (the backends serving connections, the background workers): to stop or freeze them all by PID. */
  pids(): number[];
  /** Replaced by a new pool after crashAndRestart. */
  pool: Pool;
  /** `pg_ctl restart -m immediate`: the postmaster quits without a checkpoint (as in a crash) and starts again on the same data dir, recovering from its WAL. Then a new `pool`. */
  crashAndRestart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startFencePostgres(): Promise<FencePostgres> {
  const parent = mkdtempSync(join(tmpdir(), 'holdfast-fence-pg-'));
  const dir = join(parent, 'pg');
  const out = execFileSync('bash', [POSTGRES_SH, 'start', dir], { encoding: 'utf8' });
  const url = /PGURL=(\S+)/.exec(out)![1];
  const pid = Number(/PGPID=(\d+)/.exec(out)![1]);
  const newPool = () => new Pool({ connectionString: url, max: 8 }).on('error', () => {}); // idle clients cut by a restart
  const handle: FencePostgres = {
    url,
    pid,
    pids: () => [pid, ...childrenOf(pid)],
    pool: newPool(),
    async crashAndRestart() {
      const bin = execFileSync('bash', ['-c', 'ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1'], { encoding: 'utf8' }).trim();
      const asOwner = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
      const [cmd, ...args] = [
        ...asOwner,
        join(bin, 'pg_ctl'),
        '-D',
        join(dir, 'data'),
        '-l',
        join(dir, 'server.log'),
        '-m',
        'immediate',
        '-w',
        '-t',
        '60',
        'restart',
      ];
      execFileSync(cmd, args, { stdio: 'ignore' });
      await handle.pool.end().catch(() => {});
      handle.pool = newPool(); // as a resource's process reconnects
    },
    async stop() {
      await handle.pool.end().catch(() => {});
      for (const p of handle.pids()) signal(p, 'SIGCONT'); // a test may have frozen them
      execFileSync('bash', [POSTGRES_SH, 'stop', dir], { stdio: 'ignore' });
      rmSync(parent, { recursive: true, force: true });
    },
  };
  return handle;
}

/** The PIDs whose parent is `pid` (from /proc: no ps needed). */
export function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Field 4 is the parent's PID; field 2 (the command) is in parentheses and may hold spaces.
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

/** Sends `sig` to `pid`; a process already gone is fine. */
export function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/**
 * A holdfast server on its own embedded Redis in a fresh data dir (it provably holds no lease, so
 * it serves at once). The one place these tests start holdfast. Keepalive 1000/1000 ms: a frozen
 * holder's stream is found dead in about two seconds (default: 15), then its lease runs out.
 * `args` adds server flags (e.g. --fence-signing-key).
 */
export async function startFenceHoldfast(args: string[] = []): Promise<{ server: ServerProcess; stop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'holdfast-fence-server-'));
  const server = await startServerProcess(undefined, ['--data-dir', dataDir, '--keepalive-time-ms', '1000', '--keepalive-timeout-ms', '1000', ...args]);
  return {
    server,
    async stop() {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
