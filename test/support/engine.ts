// The lock engine alone, with no gRPC server: built on its own connections to a test Redis the
// way the server builds it (src/backend/redis.ts: connectRedis, the Redis trouble words, the
// write guard with its quarantine). The engine tier's tests use only the engine's public
// methods (LockBackend); when its constructor changes, only this file changes.
import { once } from 'node:events';
import { afterAll, beforeAll } from 'vitest';
import { LockEngine } from '../../src/engine/engine';
import type { LockBackend } from '../../src/engine/backend';
import { Mode, type AcquireParams, type Grant } from '../../src/engine/types';
import type { LostReason } from '../../src/engine/types';
import { epochKey, shardEpochKey } from '../../src/engine/keys';
import { connectRedis } from '../../src/redis/connect';
import { createWriteGuard } from '../../src/redis/guard';
import { RedisStore } from '../../src/redis/store';
import { RedisTrouble, redisLabel } from '../../src/redis/trouble';
import { startTestRedis, uniqueName, type TestRedis } from './redis';

export interface TestEngineOptions {
  /** The longest lease; with `quarantineMarginMs`, a restart that lost grants pauses new ones for their sum. */
  maxTtlMs?: number;
  /** Quarantine a Redis that may have lost grants (the server's default); absent: no quarantine. */
  quarantineMarginMs?: number;
  /** How often waiters refresh their queue entries and look again (the server's: 1 s). */
  refreshMs?: number;
}

export interface TestEngine {
  engine: LockBackend;
  /** Closes the engine (waits and kept leases end) and its connections. */
  close(): Promise<void>;
}

const quiet = { warn: () => {}, info: () => {} };

export async function startEngine(redis: TestRedis, options: TestEngineOptions = {}): Promise<TestEngine> {
  const keyPrefix = 'hf'; // deleteLockState() and the servers' default
  const connections = connectRedis({ url: redis.url });
  const trouble = new RedisTrouble(redisLabel({ url: redis.url }), quiet);
  trouble.watch(connections.commands);
  const maxTtlMs = options.maxTtlMs ?? 60_000;
  let guardChanged = () => {};
  const guard = createWriteGuard(connections.commands, {
    onChange: () => guardChanged(),
    quarantine:
      options.quarantineMarginMs === undefined
        ? undefined
        : { ms: maxTtlMs + options.quarantineMarginMs, epochKey: epochKey(keyPrefix), shardEpochKey: (tag) => shardEpochKey(keyPrefix, tag) },
  });
  const commands = connections.commands;
  const store = new RedisStore(commands, connections.subscriber, {
    // As the server does: while Redis is away, a grant fails at once and hears about Redis.
    guard: guard && {
      ...guard,
      grantsBlocked: (key?: string) => (commands.status === 'ready' ? guard.grantsBlocked(key) : trouble.describe()),
      grantsResumeInMs: (key?: string) => (commands.status === 'ready' ? guard.grantsResumeInMs(key) : 0),
    },
    describeUnavailable: (err: unknown) => trouble.describe(err),
  });
  const engine = new LockEngine(store, {
    keyPrefix,
    maxTtlMs,
    entryRefreshMs: options.refreshMs,
    // Entries must outlive the refresh interval, or a waiter drops out of the queue between two.
    entryLeaseMs: options.refreshMs === undefined ? undefined : options.refreshMs * 3,
  });
  if (commands.status !== 'ready') await once(commands, 'ready');
  await store.loadFunctions();
  // Ready as the server is SERVING: once the guard knows which master this is and grants may be made.
  if (guard) {
    await new Promise<void>((resolve) => {
      guardChanged = () => {
        if (!guard.grantsBlocked()) resolve();
      };
      guardChanged(); // it may know already
    });
  }
  return {
    engine,
    async close() {
      await engine.close();
      trouble.stopping();
      guard?.close();
      await connections.close();
    },
  };
}

export interface Engines {
  redis: TestRedis;
  /** Each on connections of its own: as many servers on one Redis. */
  engines: TestEngine[];
}

/** One real redis-server and `count` engines on it, started before a test file's tests and closed after them. */
export function useEngines(count: number, options: TestEngineOptions = {}): Engines {
  const env = { engines: [] } as unknown as Engines;
  beforeAll(async () => {
    env.redis = await startTestRedis();
    env.engines = await Promise.all(Array.from({ length: count }, () => startEngine(env.redis, options)));
  });
  afterAll(async () => {
    await Promise.all(env.engines.map((e) => e.close()));
    await env.redis?.cleanup();
  });
  return env;
}

/** An exclusive, try-once request for `name` with a lease of ttlMs, no owner: `extra` changes any of it. */
export function lockRequest(name: string, ttlMs: number, extra: Partial<AcquireParams> = {}): AcquireParams {
  return { name, owner: '', ttlMs, waitMs: 0, mode: Mode.EXCLUSIVE, limit: 1, requestId: '', holdId: '', value: '', ...extra };
}

export interface KeptHold {
  grant: Grant;
  /** The hold id it was acquired and is kept with, as a Hold stream's. */
  holdId: string;
  /** The lease left after each confirmed renewal, in order. */
  renewals: number[];
  /** performance.now() before which the lease was last confirmed to last (grant or renewal). */
  confirmedUntil(): number;
  /** Resolves when the engine reports the lease lost (or ended): why, and when (performance.now()). */
  lost: Promise<{ reason: LostReason; message: string; at: number }>;
  letGo(): Promise<void>;
  abandon(): Promise<void>;
}

/** Acquires `name` as a Hold stream does (with a hold id) and has `engine` keep its lease. */
export async function keepHold(engine: TestEngine, name: string, ttlMs: number, options: { maxHoldMs?: number } = {}): Promise<KeptHold> {
  const holdId = uniqueName('hold');
  const grant = await engine.engine.acquire(lockRequest(name, ttlMs, { holdId }));
  if (!grant) throw new Error(`lock "${name}" is held: no lease to keep`);
  const renewals: number[] = [];
  let until = grant.leaseStart + grant.ttlMs;
  let onLost!: (why: { reason: LostReason; message: string; at: number }) => void;
  const lost = new Promise<{ reason: LostReason; message: string; at: number }>((resolve) => (onLost = resolve));
  const kept = engine.engine.keep(
    { name, token: grant.token, holdId, ttlMs, maxHoldMs: options.maxHoldMs ?? 0, lockDelayMs: 0, releaseOnDisconnect: false },
    {
      onRenewed: (leftMs, leaseStart) => {
        renewals.push(leftMs);
        until = Math.max(until, leaseStart + leftMs);
      },
      onLost: (reason, message) => onLost({ reason, message, at: performance.now() }),
    },
    grant.leaseStart,
    grant.ttlMs,
  );
  return { grant, holdId, renewals, confirmedUntil: () => until, lost, letGo: () => kept.letGo(), abandon: () => kept.abandon() };
}

/** A RedisStore on its own connections to a test redis-server, for the suite (the storage tier, no engine). */
export function useRedisStore(): { redis: TestRedis; store: RedisStore } {
  const fixture = {} as { redis: TestRedis; store: RedisStore };
  let close = async () => {};
  beforeAll(async () => {
    fixture.redis = await startTestRedis();
    const connections = connectRedis({ url: fixture.redis.url });
    fixture.store = new RedisStore(connections.commands, connections.subscriber);
    if (connections.commands.status !== 'ready') await once(connections.commands, 'ready');
    close = () => connections.close();
  });
  afterAll(async () => {
    await close();
    await fixture.redis?.cleanup();
  });
  return fixture;
}
