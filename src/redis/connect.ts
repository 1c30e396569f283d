// Redis connections tuned for a lock server: a command fails fast when Redis is away
// (no offline queue, short timeouts) so callers get UNAVAILABLE within about a second, and the
// client keeps reconnecting in the background so the server recovers by itself.
import { Redis, type RedisOptions } from 'ioredis';

export interface RedisConnections {
  commands: Redis;
  subscriber: Redis;
  close(): Promise<void>;
}

const FAIL_FAST: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  connectTimeout: 1000,
  commandTimeout: 1000,
  retryStrategy: (attempt) => Math.min(50 * attempt, 500),
  lazyConnect: false,
};

export function connectRedis(url: string, overrides: RedisOptions = {}): RedisConnections {
  const commands = new Redis(url, { ...FAIL_FAST, ...overrides, connectionName: 'holdfast' });
  // Subscriptions may queue while reconnecting: ioredis re-subscribes on reconnect anyway.
  const subscriber = new Redis(url, {
    ...FAIL_FAST,
    ...overrides,
    enableOfflineQueue: true,
    commandTimeout: undefined,
    connectionName: 'holdfast-sub',
  });
  // Errors surface through the commands that fail; without a listener ioredis logs them loudly.
  commands.on('error', () => {});
  subscriber.on('error', () => {});
  return {
    commands,
    subscriber,
    async close() {
      commands.disconnect();
      subscriber.disconnect();
    },
  };
}
