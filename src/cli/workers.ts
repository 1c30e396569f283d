// `holdfast serve --workers N`: N server processes (node:cluster) sharing one listening port.
// The servers share nothing but Redis, so each worker is a whole holdfast server; the primary
// only starts them (and the embedded redis-server, when no Redis is given, so that all workers
// use one), restarts a worker that dies, and stops them all on SIGTERM/SIGINT.
// `--optimize-for-size` runs the workers with node's flag of that name (a memory-saving opt-in).
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { lockDataDir, type DataDirLock } from '../redis/data-dir-lock';
import { startEmbeddedRedis, type EmbeddedRedis } from '../redis/embedded';
import { probeListen } from '../net/listen';
import { recordCompleteMaster } from '../redis/vouch';
import { wholeNumber } from './options';

const OPTIMIZE_FOR_SIZE = '--optimize-for-size';
/** The primary gives up this long after SIGTERM/SIGINT even if a worker hangs. */
const STOP_DEADLINE_MS = 12_000;

export type Workers = number | 'auto';

/** What a worker tells the primary once its server is up (a socket listening is not enough: TLS, Redis, health...). */
const LISTENING = 'holdfast-listening';

/** In a worker: tells the primary this server is up. Elsewhere: nothing. */
export function announceListening(): void {
  if (cluster.isWorker) process.send?.(LISTENING);
}

/** Parses --workers: a count of 1 or more, or auto (one per core). */
export function workerCount(value: string): Workers {
  if (value === 'auto') return 'auto';
  return wholeNumber(value, 'worker processes', 1, 'auto');
}

export function resolveWorkers(workers: Workers): number {
  return workers === 'auto' ? availableParallelism() : workers;
}

/** Whether this process should start workers instead of serving itself. */
export function runsWorkers(workers: Workers, optimizeForSize: boolean): boolean {
  if (!cluster.isPrimary) return false;
  return resolveWorkers(workers) > 1 || (optimizeForSize && !process.execArgv.includes(OPTIMIZE_FOR_SIZE));
}

export interface WorkersOptions {
  workers: Workers;
  optimizeForSize: boolean;
  /** No --redis, --redis-cluster or --redis-sentinels: the primary starts the embedded Redis. */
  embeddedRedisDir?: string;
  /** The workers' --listen and --http-listen: the primary checks them before it starts the embedded Redis. */
  listen: string;
  httpListen?: string;
  /** The servers' --key-prefix, where the embedded Redis's epoch record goes. */
  keyPrefix: string;
  logger: Logger;
}

export async function runWorkers(options: WorkersOptions): Promise<void> {
  const { logger } = options;
  const workers = resolveWorkers(options.workers);
  let embedded: EmbeddedRedis | undefined;
  let dataDirLock: DataDirLock | undefined;
  const env: Record<string, string> = {};
  // As one server does (src/server.ts): the data dir, then the ports, then the redis-server. The
  // workers bind the ports themselves, so the primary can only probe them: one taken in between
  // makes the first worker fail, and the primary stop the redis-server and exit.
  if (options.embeddedRedisDir) dataDirLock = lockDataDir(options.embeddedRedisDir, options.listen);
  try {
    await probeListen(options.listen, '--listen');
    if (options.httpListen) await probeListen(options.httpListen, '--http-listen');
    if (options.embeddedRedisDir) embedded = await startEmbeddedRedis({ dataDir: join(options.embeddedRedisDir, 'redis'), durable: true });
  } catch (err) {
    dataDirLock?.release();
    throw err;
  }
  if (embedded) {
    // The workers meet it as a Redis given by URL: tell them, through its epoch record, what the
    // primary knows (a new data dir, or every write fsynced: no grant lost), or let them quarantine.
    if (embedded.holdsEveryGrant) await recordCompleteMaster(embedded.url, options.keyPrefix);
    env.HOLDFAST_REDIS_URL = embedded.url;
    logger.info({ redisPid: embedded.pid, port: embedded.port }, 'started embedded redis-server for the workers (pass --redis URL to use your own)');
  }
  cluster.setupPrimary({ execArgv: [...process.execArgv, ...(options.optimizeForSize ? [OPTIMIZE_FOR_SIZE] : [])] });

  let stopping = false;
  let listening = 0;
  const everListened = new WeakSet<Worker>();
  const fork = () => {
    const worker = cluster.fork(env);
    worker.on('message', (message: unknown) => {
      if (message !== LISTENING || everListened.has(worker)) return;
      everListened.add(worker);
      if (++listening === workers) logger.info({ workers }, 'holdfast workers listening');
    });
  };
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(1), STOP_DEADLINE_MS).unref();
    const exits = Object.values(cluster.workers ?? {}).map(
      (w) => new Promise<void>((resolve) => (w!.isDead() ? resolve() : (w!.once('exit', () => resolve()), w!.process.kill('SIGTERM')))),
    );
    await Promise.all(exits);
    await embedded?.stop();
    dataDirLock?.release();
    process.exit(code);
  };
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    if (!everListened.has(worker)) {
      // It never served: starting another would fail the same way (bad option, port taken).
      logger.error({ pid: worker.process.pid, code, signal }, 'a worker exited before it listened; stopping');
      void stopAll(1);
      return;
    }
    listening--;
    logger.error({ pid: worker.process.pid, code, signal }, 'a worker exited; starting another');
    fork();
  });
  for (let i = 0; i < workers; i++) fork();
  process.once('SIGTERM', () => void stopAll(0));
  process.once('SIGINT', () => void stopAll(0));
}
