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
export function useServers(count = 1, args: string[] | ((index: number) => string[] | Promise<string[]>) = []): Servers {
  const env = { servers: [], clients: [] } as unknown as Servers;
  beforeAll(async () => {
    env.redis = await startTestRedis();
    const flags = await Promise.all(Array.from({ length: count }, (_, i) => (typeof args === 'function' ? args(i) : args)));
    env.servers = await Promise.all(flags.map((f) => startServerProcess(env.redis.url, f)));
    env.clients = env.servers.map((s) => connect(s.addr));
  });
  afterAll(async () => {
    env.clients.forEach((c) => c.close());
    await Promise.all(env.servers.map((s) => s.stop()));
    await env.redis?.cleanup();
  });
  return env;
}
