// One real redis-server and `count` real holdfast server processes on it, with a raw gRPC client
// for each, started before a test file's tests and stopped after them.
import { afterAll, beforeAll } from 'vitest';
import { connect, type TestClient } from './client';
import { startTestRedis, type TestRedis } from './redis';
import { startServerProcess, type ServerProcess } from './server';

export interface Servers {
  redis: TestRedis;
  servers: ServerProcess[];
  clients: TestClient[];
}

/**
 * `args`: the servers' extra flags, or a function that makes server i's (free ports, config
 * files), called once Redis runs and after the file's own beforeAll hooks registered before this.
 */
export function useServers(count = 1, args: string[] | ((index: number) => string[] | Promise<string[]>) = [], env: NodeJS.ProcessEnv = {}): Servers {
  const started = { servers: [], clients: [] } as unknown as Servers;
  beforeAll(async () => {
    started.redis = await startTestRedis();
    const flags = await Promise.all(Array.from({ length: count }, (_, i) => (typeof args === 'function' ? args(i) : args)));
    started.servers = await Promise.all(flags.map((f) => startServerProcess(started.redis.url, f, env)));
    started.clients = started.servers.map((s) => connect(s.addr));
  });
  afterAll(async () => {
    started.clients.forEach((c) => c.close());
    await Promise.all(started.servers.map((s) => s.stop()));
    await started.redis?.cleanup();
  });
  return started;
}
