// Test Redis: a private redis-server child per test file (the server's own embedded-Redis code),
// on a free loopback port, stopped by PID. Lock names are random per test, so files run in parallel.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { lockKeys } from '../../src/engine/keys';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/redis/embedded';
import { vouchFor } from '../../src/redis/vouch';

export interface TestRedis extends EmbeddedRedis {
  client: Redis;
  /** Stops redis-server (SIGTERM, or `signal`) and starts it again on the same port and data dir. */
  restart(signal?: NodeJS.Signals): Promise<void>;
  /** Sends `signal` (SIGKILL: a crash) and resolves once redis-server has exited; startAgain() brings it back. */
  kill(signal: NodeJS.Signals): Promise<void>;
  /** Starts redis-server again on the same port and data dir, after kill() or stop(). */
  startAgain(): Promise<void>;
  cleanup(): Promise<void>;
}

/**
 * A fresh test Redis, recorded as new to holdfast (`holdfast skip-first-quarantine`), so servers
 * grant at once instead of waiting out the quarantine a Redis they cannot vouch for gets.
 * `restart()` does not record it again: a restarted Redis is what the quarantine is for.
 */
export async function startTestRedis(options: { vouch?: boolean } = {}): Promise<TestRedis> {
  const dataDir = mkdtempSync(join(tmpdir(), 'holdfast-redis-'));
  let server = await startEmbeddedRedis({ dataDir, args: ['--save', ''] });
  if (options.vouch !== false) await vouchFor({ url: server.url });
  const client = new Redis(server.url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  const handle: TestRedis = {
    ...server,
    client,
    async restart(signal?: NodeJS.Signals) {
      if (signal) await handle.kill(signal);
      else await server.stop();
      await handle.startAgain();
    },
    async kill(signal: NodeJS.Signals) {
      const { process: child } = server;
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      await exited;
    },
    async startAgain() {
      server = await startEmbeddedRedis({ dataDir, port: server.port, args: ['--save', ''] });
      handle.pid = server.pid;
      handle.process = server.process;
    },
    async stop() {
      await server.stop();
    },
    async cleanup() {
      client.disconnect();
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return handle;
}

/** Deletes a lock's state behind the servers' backs, as a crash or a flush would. */
export async function deleteLockState(redis: TestRedis, name: string): Promise<void> {
  const keys = lockKeys('hf', name);
  await redis.client.del(keys.holders, keys.queue, keys.data);
}

export function uniqueName(label = 'lock'): string {
  return `${label}-${randomBytes(6).toString('hex')}`;
}
