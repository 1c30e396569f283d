// Redis connections tuned for a lock server: a command fails fast when Redis is away
// (no offline queue, short timeouts) so callers get UNAVAILABLE within about a second, and the
// client keeps reconnecting in the background so the server recovers by itself.
// One commands connection (or cluster client) and one subscriber, whatever the number of locks.
import { Cluster, Redis, type RedisOptions } from 'ioredis';

export type RedisTarget = { url: string } | { clusterNodes: string[] };

export interface RedisConnections {
  commands: Redis | Cluster;
  subscriber: Redis | Cluster;
  close(): Promise<void>;
}

const FAIL_FAST: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  connectTimeout: 1000,
  commandTimeout: 1000,
  retryStrategy: (attempt) => Math.min(50 * attempt, 500),
};

// Calls made in the same tick by concurrent requests go out in one write.
const AUTO_PIPELINE: RedisOptions = { enableAutoPipelining: true };

// Subscriptions may wait for a reconnect: ioredis subscribes again when it is back.
const SUBSCRIBER: RedisOptions = { enableOfflineQueue: true, commandTimeout: undefined };

function clusterClient(nodes: string[], options: RedisOptions, name: string, sharded: boolean): Cluster {
  return new Cluster(
    nodes.map((node) => {
      const [host, port] = node.split(':');
      return { host, port: Number(port) };
    }),
    {
      enableOfflineQueue: options.enableOfflineQueue,
      enableAutoPipelining: options.enableAutoPipelining,
      clusterRetryStrategy: (attempt) => Math.min(100 * attempt, 1000),
      redisOptions: { ...options, connectionName: name },
      shardedSubscribers: sharded,
    },
  );
}

export function connectRedis(target: RedisTarget): RedisConnections {
  const commands =
    'url' in target
      ? new Redis(target.url, { ...FAIL_FAST, ...AUTO_PIPELINE, connectionName: 'holdfast' })
      : clusterClient(target.clusterNodes, { ...FAIL_FAST, ...AUTO_PIPELINE }, 'holdfast', false);
  const subscriber =
    'url' in target
      ? new Redis(target.url, { ...FAIL_FAST, ...SUBSCRIBER, connectionName: 'holdfast-sub' })
      : clusterClient(target.clusterNodes, { ...FAIL_FAST, ...SUBSCRIBER }, 'holdfast-sub', true);
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
