// The Redis backend: a given Redis, Sentinel group or Cluster, or a private redis-server child;
// the topology's write guard (replica acknowledgement, failover quarantine); the lock engine on
// top; and the start-up checks that go with them.
import { join } from 'node:path';
import { LockEngine } from '../engine/engine';
import type { EngineObserver } from '../engine/observer';
import { epochKey, namespacePrefix, shardEpochKey } from '../engine/keys';
import { redactRedisUrl } from '../config/redact';
import { connectRedis, type RedisTarget } from '../redis/connect';
import { startEmbeddedRedis, type EmbeddedRedis } from '../redis/embedded';
import { createWriteGuard } from '../redis/guard';
import { RedisStore } from '../redis/store';
import { replicaSettingsProblem } from '../redis/min-replicas';
import { RedisTrouble, redisLabel } from '../redis/trouble';
import { QUARANTINE_MARGIN_MS, SAFE_MAX_TTL_MS, UNSAFE_FLAG, quarantineMs, quarantineOn } from '../config/safety';
import { listedReplicas } from '../redis/replica-acks';
import type { CycleEdge, DeadlockOptions } from '../engine/deadlocks';
import type { Backend, BackendConfig } from './backend';

/**
 * Calls answered before Redis is connected would all be UNAVAILABLE: wait this long for it, or
 * for the first sign that it is away (refused, unknown host, bad password), then listen anyway.
 */
const REDIS_STARTUP_WAIT_MS = 1500;

function readyWithin(redis: { once(event: 'ready' | 'error', cb: () => void): unknown }, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve(true);
    });
    redis.once('error', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
}

async function identifiedWithin(guard: { identified(): boolean }, ms: number): Promise<void> {
  for (const until = performance.now() + ms; !guard.identified() && performance.now() < until; ) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function redisTarget(config: BackendConfig): RedisTarget | undefined {
  if (config.redisClusterNodes?.length) return { clusterNodes: config.redisClusterNodes };
  if (config.redisSentinels?.length) return { sentinels: config.redisSentinels, masterName: config.redisMaster ?? 'mymaster' };
  return config.redisUrl ? { url: config.redisUrl } : undefined;
}

/** Whether `config` names no Redis, so that the embedded redis-server keeps its data in config.dataDir. */
export function usesEmbeddedRedis(config: BackendConfig): boolean {
  return !config.redlock?.length && !(config.redisUrl ?? config.redisClusterNodes?.join(',') ?? config.redisSentinels?.join(','));
}

/** Connects (or starts) Redis and the engine; `onChange` is called whenever serving() may have changed. */
export async function startRedisBackend(config: BackendConfig, maxWaitersPerLock: number, onChange: () => void, observer?: EngineObserver): Promise<Backend> {
  const log = config.logger;
  let embedded: EmbeddedRedis | undefined;
  const target = redisTarget(config);
  let redisUrl = config.redisUrl ?? config.redisClusterNodes?.join(',') ?? config.redisSentinels?.join(',');
  if (!redisUrl) {
    embedded = await startEmbeddedRedis({ dataDir: join(config.dataDir, 'redis'), durable: true });
    redisUrl = embedded.url;
    log.info(
      { redisPid: embedded.pid, port: embedded.port, dataDir: embedded.dataDir, holdsEveryGrant: embedded.holdsEveryGrant },
      'started embedded redis-server (pass --redis URL to use your own)',
    );
  }
  const trouble = new RedisTrouble(redisLabel(target ?? { url: redisUrl }), log);
  const redis = target ? connectRedis(target, config.redisSecurity) : connectRedis({ url: redisUrl });
  trouble.watch(redis.commands);
  let lastBackgroundError = '';
  const quarantineMarginMs = config.quarantineMarginMs ?? QUARANTINE_MARGIN_MS;
  const maxTtlMs = config.maxTtlMs ?? SAFE_MAX_TTL_MS;
  const quarantine = quarantineOn(config) ? quarantineMs(maxTtlMs, quarantineMarginMs) : 0;
  logSafety(log, quarantine, maxTtlMs, quarantineMarginMs, config.syncReplicas);
  let onGuardChange = () => {};
  const guard = createWriteGuard(redis.commands, {
    syncReplicas: config.syncReplicas,
    syncTimeoutMs: config.syncTimeoutMs,
    quarantine: quarantine
      ? {
          ms: quarantine,
          epochKey: epochKey(config.keyPrefix),
          shardEpochKey: (tag) => shardEpochKey(config.keyPrefix, tag),
          // The embedded Redis on a new data dir, or one that fsyncs every write, lost nothing.
          startsComplete: embedded?.holdsEveryGrant,
          onQuarantine: (why, ms) =>
            log.warn({ why, ms }, `quarantine: no new grants for ${Math.ceil(ms / 1000)} s, until every lease the old master may have granted has run out`),
          onError: (err) => log.debug({ err: String((err as Error)?.message ?? err) }, 'could not check which Redis master this is'),
        }
      : undefined,
    onChange: () => onGuardChange(),
  });
  const store = new RedisStore(redis.commands, redis.subscriber, {
    // While Redis is away, a grant fails at once (UNAVAILABLE, waiters included: nothing to wait
    // for, as without the guard), and the client hears about Redis, not the master check.
    guard: guard && {
      ...guard,
      grantsBlocked: (key) => (redis.commands.status === 'ready' ? guard.grantsBlocked(key) : trouble.describe()),
      grantsResumeInMs: (key) => (redis.commands.status === 'ready' ? guard.grantsResumeInMs(key) : 0),
    },
    describeUnavailable: (err) => trouble.describe(err),
  });
  // One engine per namespace, all on this store's connections; each wait room listens on the one
  // subscriber for its own channels (a message goes to every room, which ignores others').
  const deadlocks = deadlockOptions(config, log);
  const engineWithPrefix = (keyPrefix: string) =>
    new LockEngine(store, {
      observer,
      keyPrefix,
      maxTtlMs,
      maxWaitersPerLock,
      deadlocks,
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
    store.loadFunctions().catch((err: unknown) => log.debug({ err: String((err as Error)?.message ?? err) }, 'could not load the lock functions yet'));
  redis.commands.on('ready', () => {
    lastBackgroundError = '';
    redisReady = true;
    onChange();
    void loadLockFunctions();
  });
  const closeRedis = () => {
    trouble.stopping(); // closed on purpose (stop, a refused start): no news
    return redis.close();
  };
  redis.commands.on('close', () => {
    redisReady = false;
    onChange();
  });
  if (!redisReady) await readyWithin(redis.commands, REDIS_STARTUP_WAIT_MS);
  // Listen once the master is identified (milliseconds): a try-once Acquire sent right after the
  // start would otherwise be told UNAVAILABLE while the server checks which master it writes to.
  if (redisReady && guard) await identifiedWithin(guard, REDIS_STARTUP_WAIT_MS);
  if (redisReady) await loadLockFunctions();

  const problem = await replicaSettingsProblem(redis.commands, { syncReplicas: !!config.syncReplicas, quarantine: quarantine > 0, quarantineMarginMs });
  if (problem?.refuse && !config.allowMinReplicasZero) {
    guard?.close();
    await closeRedis();
    await embedded?.stop();
    throw new Error(`${problem.message}, or pass ${UNSAFE_FLAG} --allow-min-replicas-zero to give up the failover guarantee`);
  }
  if (problem) log.warn(problem.message);
  const listed = typeof config.syncReplicas === 'number' && config.syncReplicas > 0 ? await listedReplicas(redis.commands) : undefined;
  if (listed !== undefined && listed < (config.syncReplicas as number)) {
    log.warn(
      { listed, syncReplicas: config.syncReplicas },
      '--sync-replicas: the master lists fewer replicas than asked for; every grant is answered UNAVAILABLE until enough are connected',
    );
  }

  return {
    engine,
    engineForNamespace: (namespace) => engineWithPrefix(namespacePrefix(config.keyPrefix, namespace)),
    description: redactRedisUrl(redisUrl),
    serving: () => redisReady && !guard?.grantsBlocked(),
    redisUp: () => redisReady,
    redisTimeMs: async () => {
      const [seconds, micros] = await redis.commands.time();
      return Number(seconds) * 1000 + Number(micros) / 1000;
    },
    grantsBlocked: () => guard?.grantsBlocked() ?? null,
    async close() {
      trouble.stopping();
      guard?.close();
      await closeRedis();
      if (embedded) {
        await embedded.stop();
        log.info('stopped embedded redis-server');
      }
    },
  };
}

/**
 * Deadlock detection's settings, and its log lines: the cycle that ended a wait at warn, a cycle
 * that broke before it was checked again (nothing ended) at info.
 * HOLDFAST_DEADLOCK_RECHECK_DELAY_MS is a test hook (test/e2e/deadlocks.test.ts): a pause between
 * finding a cycle and checking it again.
 */
function deadlockOptions(config: BackendConfig, log: BackendConfig['logger']): DeadlockOptions {
  const describe = (cycle: CycleEdge[]) => cycle.map((e) => ({ owner: e.owner, lock: e.name, heldBy: e.holder }));
  return {
    timeoutMs: config.deadlockTimeoutMs ?? 1000,
    recheckDelayMs: Number(process.env.HOLDFAST_DEADLOCK_RECHECK_DELAY_MS ?? 0) || undefined,
    onEvent: (event) => {
      if (event.kind === 'aborted') log.warn({ cycle: describe(event.cycle), ended: event.victim.waiterId }, event.message);
      else if (event.kind === 'found') log.info({ cycle: describe(event.cycle) }, 'deadlock walk found a cycle of waits; checking each edge again');
      else if (event.kind === 'broke') log.info({ cycle: describe(event.cycle) }, 'a cycle of waits broke before it was checked again: no wait ended');
      else log.info({ owner: event.owner, visited: event.visited, ms: Math.round(event.ms) }, 'deadlock walk stopped at its bound: no wait ended');
    },
  };
}

/** One line at start that says what the defaults guarantee here and what it costs. */
function logSafety(log: BackendConfig['logger'], quarantine: number, maxTtlMs: number, marginMs: number, syncReplicas: unknown): void {
  if (!quarantine) {
    log.warn(
      { failoverSafety: false },
      `failover safety is OFF (${UNSAFE_FLAG}): after a Redis restart or failover, a lock may be granted while an earlier holder still counts its lease valid`,
    );
    return;
  }
  log.info(
    { failoverSafety: true, quarantineMs: quarantine, maxTtlMs, syncReplicas: syncReplicas || 0 },
    `failover safety on: leases up to ${maxTtlMs} ms; after a Redis restart or failover that may have lost grants, no new grant for ${quarantine} ms (--max-ttl-ms + --quarantine-margin-ms ${marginMs})`,
  );
}
