// A fence store in the protected resource's own Redis: the compare-and-record is one Lua script
// (fence-record-1), so guards in many processes agree. As durable as that Redis: at start it refuses
// a Redis that can lose an acknowledged write unless told to accept that loss. It answers within
// its bound (timeoutMs, 1 s by default) even when that Redis is down: the guard then fails closed.
import { createHash } from 'node:crypto';
import { FENCE_RECORD_SCRIPT } from './fence-record-1';
import { checkedTimeout, optionalPeer, withinBound, type FenceDecision, type FenceStore } from './store';

/** The one thing used of a Redis client: ioredis's `call` (so the SDK does not depend on ioredis). */
export interface RedisCommander {
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
}

export interface RedisFenceStoreOptions {
  /**
   * How long a lock's record outlives its last accepted request, in ms (default 30 days): the longest
   * a stale holder may be paused and still be caught. Past it, the record is gone and a stale token
   * would be taken as the first one seen.
   */
  keepMs?: number;
  /**
   * Accept a Redis that can lose acknowledged writes (appendonly not "yes" or appendfsync not
   * "always", or CONFIG disabled so it cannot be checked). A restart of such a Redis can forget the
   * newest token, and a stale holder's write then passes.
   */
  allowLossyRedis?: boolean;
  /**
   * How long a check may wait for Redis, in ms (default 1000): past it, or at once when Redis is
   * known down, the check fails and the guard answers 503 / UNAVAILABLE.
   */
  timeoutMs?: number;
}

/** What RedisFenceStore.connect passes to ioredis, so a check fails fast when Redis is down. */
export function boundedRedisOptions(timeoutMs: number) {
  return {
    // A command while disconnected fails at once instead of waiting in ioredis's queue for a reconnect.
    enableOfflineQueue: false,
    // A command in flight when the connection drops fails instead of being sent again after the reconnect.
    maxRetriesPerRequest: 0,
    // A Redis that takes the connection but does not answer (frozen, a black-holed network).
    commandTimeout: timeoutMs,
    connectTimeout: timeoutMs,
    lazyConnect: true,
  };
}

export const DEFAULT_KEEP_MS = 30 * 24 * 3600 * 1000;
const SCRIPT_SHA = createHash('sha1').update(FENCE_RECORD_SCRIPT).digest('hex');

/** The record of one lock: one hash-tagged key, so a Cluster keeps it in one slot. */
export function fenceKey(lock: string): string {
  return `holdfast-fence:{${lock}}`;
}

export class RedisFenceStore implements FenceStore {
  private constructor(
    private readonly redis: RedisCommander,
    private readonly keepMs: number,
    private readonly timeoutMs: number,
    /** Set when connect() built the client: close() ends it. */
    private readonly owned?: { disconnect(): void },
  ) {}

  /**
   * A store on your ioredis client (anything with `call`). Checks the Redis's persistence settings
   * first; rejects with an error naming the one at fault. The store bounds each check by
   * `timeoutMs` itself; give your client `enableOfflineQueue: false` and `maxRetriesPerRequest: 0`
   * (as connect() does), or checks refused at the bound still wait in its queue for a reconnect.
   */
  static async open(redis: RedisCommander, options: RedisFenceStoreOptions = {}): Promise<RedisFenceStore> {
    return RedisFenceStore.make(redis, options);
  }

  /**
   * A store on a client it builds from `url` (redis://[:password@]host:port[/db]) with ioredis, an
   * optional peer dependency, and the options that make a check fail within `timeoutMs` when
   * Redis is down (boundedRedisOptions; `redisOptions` adds or overrides ioredis options).
   */
  static async connect(url: string, options: RedisFenceStoreOptions & { redisOptions?: Record<string, unknown> } = {}): Promise<RedisFenceStore> {
    const timeoutMs = checkedTimeout(options.timeoutMs);
    const ioredis = await optionalPeer(() => import('ioredis'), 'RedisFenceStore.connect', 'ioredis@5');
    const client = new ioredis.Redis(url, { ...boundedRedisOptions(timeoutMs), ...options.redisOptions });
    client.on('error', () => {}); // each failed check says why; ioredis reconnects by itself
    try {
      await client.connect();
    } catch (err) {
      client.disconnect();
      throw new Error(`the fence store cannot connect to Redis at ${redisAddress(url)}: ${redisFailure(err, timeoutMs)}`);
    }
    try {
      return await RedisFenceStore.make(client, options, client);
    } catch (err) {
      client.disconnect();
      throw err;
    }
  }

  private static async make(redis: RedisCommander, options: RedisFenceStoreOptions, owned?: { disconnect(): void }): Promise<RedisFenceStore> {
    const keepMs = options.keepMs ?? DEFAULT_KEEP_MS;
    if (!Number.isSafeInteger(keepMs) || keepMs <= 0) throw new RangeError(`keepMs must be a positive whole number of ms, got ${keepMs}`);
    const timeoutMs = checkedTimeout(options.timeoutMs);
    if (!options.allowLossyRedis) await refuseLossyRedis(redis);
    return new RedisFenceStore(redis, keepMs, timeoutMs, owned);
  }

  /** Rejects with a FenceStoreUnavailableError saying why in words when Redis does not answer within the bound. */
  check(lock: string, token: bigint): Promise<FenceDecision> {
    return withinBound(this.record(lock, token), this.timeoutMs, `no answer from its Redis within ${this.timeoutMs} ms`, (err) =>
      redisFailure(err, this.timeoutMs),
    );
  }

  private async record(lock: string, token: bigint): Promise<FenceDecision> {
    const args = [1, fenceKey(lock), token.toString(), this.keepMs];
    let reply: unknown;
    try {
      reply = await this.redis.call('EVALSHA', SCRIPT_SHA, ...args);
    } catch (err) {
      if (!String((err as Error)?.message).startsWith('NOSCRIPT')) throw err;
      reply = await this.redis.call('EVAL', FENCE_RECORD_SCRIPT, ...args);
    }
    const [accepted, newest] = reply as [number, string | Buffer];
    return { accepted: Number(accepted) === 1, newest: BigInt(String(newest)) };
  }

  /** Ends the client that connect() built (a client you passed to open() is yours to end). */
  async close(): Promise<void> {
    this.owned?.disconnect();
  }
}

/** Host and port of a redis:// URL, without its password. */
function redisAddress(url: string): string {
  try {
    const { host } = new URL(url);
    return host || url;
  } catch {
    return 'the URL given (not a valid redis:// URL)';
  }
}

/** Why a Redis command failed, in words (ioredis's messages name its options, not the cause). */
function redisFailure(err: unknown, timeoutMs: number): string {
  const e = err as { message?: string; code?: string };
  const message = String(e?.message);
  if (e?.code === 'ECONNREFUSED' || /ECONNREFUSED/.test(message)) return 'its Redis refused the connection (nothing listens there)';
  if (/timed out|ETIMEDOUT/i.test(message)) return `no answer from its Redis within ${timeoutMs} ms`;
  if (/enableOfflineQueue|Connection is closed|max retries per request|ECONNRESET|EPIPE/i.test(message))
    return 'its Redis is not connected (down or unreachable)';
  if (/ENOTFOUND|EAI_AGAIN/.test(message)) return "its Redis's host name does not resolve";
  if (message.startsWith('READONLY')) return 'its Redis is a read-only replica';
  if (/^(OOM|MISCONF)/.test(message)) return 'its Redis refuses writes (out of memory, or it cannot persist)';
  if (/^(NOAUTH|WRONGPASS)/.test(message)) return 'its Redis refused the credentials';
  return 'its Redis answered the check with an error';
}

async function configGet(redis: RedisCommander, name: string): Promise<string> {
  let reply: unknown;
  try {
    reply = await redis.call('CONFIG', 'GET', name);
  } catch (err) {
    const why = (err as Error).message;
    if (/unknown command/i.test(why)) {
      throw new Error(
        `the fence store cannot check the Redis's persistence: CONFIG is disabled or renamed on this Redis (CONFIG GET ${name}: ${why}). ` +
          'Enable it, or set allowLossyRedis if this Redis is known to keep every acknowledged write',
      );
    }
    throw new Error(`the fence store could not read the Redis's ${name} setting (CONFIG GET ${name}: ${why})`);
  }
  const pairs = (Array.isArray(reply) ? reply : []).map(String);
  return pairs[pairs.indexOf(name) + 1] ?? '';
}

async function refuseLossyRedis(redis: RedisCommander): Promise<void> {
  const appendonly = await configGet(redis, 'appendonly');
  if (appendonly !== 'yes') {
    throw new Error(
      `the fence store's Redis has appendonly "${appendonly}": a restart can forget the newest fencing tokens. Set appendonly yes and appendfsync always, or set allowLossyRedis to accept that loss`,
    );
  }
  const appendfsync = await configGet(redis, 'appendfsync');
  if (appendfsync !== 'always') {
    throw new Error(
      `the fence store's Redis has appendfsync "${appendfsync}": a crash can lose the last second of acknowledged fencing tokens. Set appendfsync always, or set allowLossyRedis to accept that loss`,
    );
  }
}
