// The Redis backend: a given Redis, Sentinel group or Cluster, or a private redis-server child;
// the topology's write guard (replica acknowledgement, failover quarantine); the lock engine on
// top; and the start-up checks that go with them.
import { join } from 'node:path';
import type { ServerConfig } from '../server';
import { LockEngine } from '../engine/engine';
import type { EngineObserver } from '../engine/observer';
import { epochKey, namespacePrefix, shardEpochKey } from '../engine/keys';
import { lockLibrary } from '../engine/scripts';
import { connectRedis, redactRedisUrl, type RedisTarget } from '../redis/connect';
import { startEmbeddedRedis, type EmbeddedRedis } from '../redis/embedded';
import { createWriteGuard } from '../redis/guard';
import { minReplicasProblem } from '../redis/min-replicas';
import { listedReplicas } from '../redis/replica-acks';
import type { ServerLimits } from '../transport/limits';
import { MAX_TTL_MS } from '../transport/requests';
import type { Backend } from './backend';

/** Calls answered before Redis is connected would all be UNAVAILABLE: wait this long for it first. */
const REDIS_STARTUP_WAIT_MS = 5000;

function readyWithin(redis: { once(event: 'ready', cb: () => void): unknown }, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

function redisTarget(config: ServerConfig): RedisTarget | undefined {
  if (config.redisClusterNodes?.length) return { clusterNodes: config.redisClusterNodes };
  if (config.redisSentinels?.length) return { sentinels: config.redisSentinels, masterName: config.redisMaster ?? 'mymaster' };
  return config.redisUrl ? { url: config.redisUrl } : undefined;
}

/** Connects (or starts) Redis and the engine; `onChange` is called whenever serving() may have changed. */
export async function startRedisBackend(config: ServerConfig, limits: ServerLimits, onChange: () => void, observer?: EngineObserver): Promise<Backend> {
  const log = config.logger;
  let embedded: EmbeddedRedis | undefined;
  const target = redisTarget(config);
  let redisUrl = config.redisUrl ?? config.redisClusterNodes?.join(',') ?? config.redisSentinels?.join(',');
  if (!redisUrl) {
    embedded = await startEmbeddedRedis({ dataDir: join(config.dataDir, 'redis') });
    redisUrl = embedded.url;
    log.info({ redisPid: embedded.pid, port: embedded.port, dataDir: embedded.dataDir }, 'started embedded redis-server (pass --redis URL to use your own)');
  }
  const redis = target ? connectRedis(target, config.redisSecurity) : connectRedis({ url: redisUrl });
  let lastBackgroundError = '';
  const quarantineMarginMs = config.quarantineMarginMs ?? 1000;
  let onGuardChange = () => {};
  const guard = createWriteGuard(redis.commands, {
    syncReplicas: config.syncReplicas,
    syncTimeoutMs: config.syncTimeoutMs,
    quarantine: config.failoverQuarantine
      ? {
          ms: (config.maxTtlMs ?? MAX_TTL_MS) + quarantineMarginMs,
          epochKey: epochKey(config.keyPrefix),
          shardEpochKey: (tag) => shardEpochKey(config.keyPrefix, tag),
          onQuarantine: (why, ms) => log.warn({ why, ms }, 'quarantine: no new grants until every lease the old master may have granted has run out'),
          onError: (err) => log.debug({ err: String((err as Error)?.message ?? err) }, 'could not check which Redis master this is'),
        }
      : undefined,
    onChange: () => onGuardChange(),
  });
  // One engine per namespace, all on these two connections; each wait room listens on the one
  // subscriber for its own channels (a message goes to every room, which ignores others').
  const engineWithPrefix = (keyPrefix: string) => new LockEngine(redis.commands, redis.subscriber, {
    observer,
    keyPrefix,
    guard,
    maxTtlMs: config.maxTtlMs,
    maxWaitersPerLock: limits.maxWaitersPerLock,
    onBackgroundError: (err) => {
      const message = String((err as Error)?.message ?? err);
      if (message !== lastBackgroundError) log.warn({ err: message }, 'background Redis call failed');
      lastBackgroundError = message;
    },
  });
  const engine = engineWithPrefix(config.keyPrefix);
  redis.subscriber.setMaxListeners(0);

  // Serving while Redis answers and new grants may be made (not while a new master is quarantined).
  let redisReady = redis.commands.status === 'ready';
  onGuardChange = onChange;
  // The lock functions go in as soon as Redis answers, not with the first grant: under
  // --sync-replicas that grant's WAIT would otherwise also wait for the replicas to take in the
  // library. (A call that finds them missing loads them too.)
  const loadLockFunctions = () =>
    lockLibrary()
      .load(redis.commands)
      .catch((err: unknown) => log.debug({ err: String((err as Error)?.message ?? err) }, 'could not load the lock functions yet'));
  redis.commands.on('ready', () => {
    lastBackgroundError = '';
    redisReady = true;
    onChange();
    log.info('redis ready');
    void loadLockFunctions();
  });
  let closingRedis = false; // closed on purpose (stop, a refused start): no news
  const closeRedis = () => {
    closingRedis = true;
    return redis.close();
  };
  redis.commands.on('close', () => {
    redisReady = false;
    onChange();
    if (!closingRedis) log.warn('redis connection lost; answering UNAVAILABLE until it is back');
  });
  if (!redisReady && !(await readyWithin(redis.commands, REDIS_STARTUP_WAIT_MS))) {
    log.warn({ redis: redactRedisUrl(redisUrl) }, 'Redis is not reachable yet; listening anyway and answering UNAVAILABLE until it is');
  }
  if (redisReady) await loadLockFunctions();

  if (config.syncReplicas || config.failoverQuarantine) {
    const problem = await minReplicasProblem(redis.commands, { syncReplicas: !!config.syncReplicas, quarantineMarginMs });
    if (problem?.refuse && !config.allowMinReplicasZero) {
      guard?.close();
      await closeRedis();
      await embedded?.stop();
      throw new Error(`${problem.message}, or pass --allow-min-replicas-zero`);
    }
    if (problem) log.warn(problem.message);
    const listed = typeof config.syncReplicas === 'number' ? await listedReplicas(redis.commands) : undefined;
    if (listed !== undefined && listed < (config.syncReplicas as number)) {
      log.warn({ listed, syncReplicas: config.syncReplicas }, '--sync-replicas: the master lists fewer replicas than asked for; every grant is answered UNAVAILABLE until enough are connected');
    }
  }

  return {
    engine,
    engineForNamespace: (namespace) => engineWithPrefix(namespacePrefix(config.keyPrefix, namespace)),
    description: redactRedisUrl(redisUrl),
    serving: () => redisReady && !guard?.grantsBlocked(),
    redisUp: () => redisReady,
    grantsBlocked: () => guard?.grantsBlocked() ?? null,
    async close() {
      guard?.close();
      await closeRedis();
      if (embedded) {
        await embedded.stop();
        log.info('stopped embedded redis-server');
      }
    },
  };
}
