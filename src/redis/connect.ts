// Redis connections tuned for a lock server: a command fails fast when Redis is away
// (no offline queue, short timeouts) so callers get UNAVAILABLE within about a second, and the
// client keeps reconnecting in the background so the server recovers by itself.
// One commands connection (or cluster client) and one subscriber, whatever the number of locks.
import { Cluster, Redis, type RedisOptions } from 'ioredis';

export type RedisTarget = { url: string } | { clusterNodes: string[] } | { sentinels: string[]; masterName: string };

/** How to authenticate to Redis and whether to use TLS, for every target kind. */
export interface RedisSecurity {
  /** ACL user and password; a URL's own (redis://user:pass@host) come first. */
  username?: string;
  password?: string;
  /** TLS to Redis (rediss:// turns it on too); verified against `ca` when given, else the system's CAs. */
  tls?: boolean;
  ca?: Buffer;
  /** The Sentinels' own user and password, when they require one. */
  sentinelUsername?: string;
  sentinelPassword?: string;
}

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

function hostPort(node: string): { host: string; port: number } {
  const at = node.lastIndexOf(':');
  return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
}

/**
 * A Sentinel client that connects again whenever it ends without being closed. ioredis (5.11 and
 * 6.0 alike) ends one for good when its failover detector hears +switch-master while the client
 * is asking a Sentinel for the master (after the old master's connection dropped): the detector's
 * disconnect aborts that attempt, and the client gives up instead of asking again. On a busy
 * machine asking takes long enough for that to happen in a failover (test/e2e/failover-stress:
 * one of a server's connections never came back).
 */
class SentinelRedis extends Redis {
  private closing = false;

  constructor(options: RedisOptions) {
    super(options);
    this.on('end', () => {
      if (!this.closing) setTimeout(() => !this.closing && this.status === 'end' && this.connect().catch(() => {}), 50).unref();
    });
  }

  override disconnect(reconnect = false): void {
    if (!reconnect) this.closing = true;
    super.disconnect(reconnect);
  }

  override duplicate(override: Partial<RedisOptions> = {}): Redis {
    return new SentinelRedis({ ...this.options, ...override });
  }
}

/**
 * Follows the master that the Sentinels name: asks them on every (re)connect, and listens for
 * +switch-master so a failover drops the connection to the old master at once, even one that
 * hangs (SIGSTOP, partition) instead of closing. A write refused with READONLY (a demoted
 * master) reconnects too.
 */
function sentinelClient(sentinels: string[], masterName: string, options: RedisOptions, name: string, security: RedisSecurity): Redis {
  return new SentinelRedis({
    ...options,
    sentinels: sentinels.map(hostPort),
    sentinelUsername: security.sentinelUsername,
    sentinelPassword: security.sentinelPassword,
    // Sentinels that guard TLS masters speak TLS themselves.
    ...(options.tls ? { sentinelTLS: options.tls, enableTLSForSentinelMode: true } : {}),
    name: masterName,
    role: 'master',
    connectionName: name,
    failoverDetector: true,
    sentinelRetryStrategy: (attempt) => Math.min(100 * attempt, 1000),
    reconnectOnError: (err) => /^READONLY\b/.test(err.message),
  });
}

function clusterClient(nodes: string[], options: RedisOptions, name: string, sharded: boolean): Cluster {
  return new Cluster(nodes.map(hostPort), {
    enableOfflineQueue: options.enableOfflineQueue,
    enableAutoPipelining: options.enableAutoPipelining,
    clusterRetryStrategy: (attempt) => Math.min(100 * attempt, 1000),
    redisOptions: { ...options, connectionName: name },
    shardedSubscribers: sharded,
  });
}

/** Credentials and TLS as ioredis options, leaving out what is not set. */
function securityOptions(security: RedisSecurity): RedisOptions {
  const options: RedisOptions = {};
  if (security.username) options.username = security.username;
  if (security.password) options.password = security.password;
  if (security.tls || security.ca) options.tls = security.ca ? { ca: security.ca } : {};
  return options;
}

export function connectRedis(target: RedisTarget, security: RedisSecurity = {}): RedisConnections {
  const secured = securityOptions(security);
  const client = (tuning: RedisOptions, name: string, sharded: boolean): Redis | Cluster => {
    const options = { ...tuning, ...secured };
    // A URL's own user and password win: ioredis fills only what the URL leaves out.
    if ('url' in target) return new Redis(target.url, { ...options, connectionName: name });
    if ('sentinels' in target) return sentinelClient(target.sentinels, target.masterName, options, name, security);
    return clusterClient(target.clusterNodes, options, name, sharded);
  };
  const commands = client({ ...FAIL_FAST, ...AUTO_PIPELINE }, 'holdfast', false);
  const subscriber = client({ ...FAIL_FAST, ...SUBSCRIBER }, 'holdfast-sub', true);
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
