// A fence store in the protected resource's own Redis: the compare-and-record is one Lua script
// (fence-record-1), so guards in many processes agree. As durable as that Redis: at start it refuses
// a Redis that can lose an acknowledged write unless told to accept that loss.
import { createHash } from 'node:crypto';
import { FENCE_RECORD_SCRIPT } from './fence-record-1';
import type { FenceDecision, FenceStore } from './store';

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
  ) {}

  /** Checks the Redis's persistence settings first; rejects with an error naming the one at fault. */
  static async open(redis: RedisCommander, options: RedisFenceStoreOptions = {}): Promise<RedisFenceStore> {
    const keepMs = options.keepMs ?? DEFAULT_KEEP_MS;
    if (!Number.isSafeInteger(keepMs) || keepMs <= 0) throw new RangeError(`keepMs must be a positive whole number of ms, got ${keepMs}`);
    if (!options.allowLossyRedis) await refuseLossyRedis(redis);
    return new RedisFenceStore(redis, keepMs);
  }

  async check(lock: string, token: bigint): Promise<FenceDecision> {
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
