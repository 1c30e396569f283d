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

/** `args`: the servers' extra flags, or a function that makes them (free ports, config files) once Redis runs. */
export function useServers(count = 1, args: string[] | (() => string[] | Promise<string[]>) = []): Servers {
  const env = { servers: [], clients: [] } as unknown as Servers;
  beforeAll(async () => {
    env.redis = await startTestRedis();
    const flags = typeof args === 'function' ? await args() : args;
    env.servers = await Promise.all(Array.from({ length: count }, () => startServerProcess(env.redis.url, flags)));
    env.clients = env.servers.map((s) => connect(s.addr));
  });
  afterAll(async () => {
    env.clients.forEach((c) => c.close());
    await Promise.all(env.servers.map((s) => s.stop()));
    await env.redis?.cleanup();
  });
  return env;
}
