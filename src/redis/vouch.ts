// An operator's word that a Redis is new to holdfast: no server has ever granted a lock on it,
// so the first server need not wait out the quarantine that a Redis it cannot vouch for gets.
// Refused when the Redis holds any key under the prefix: then grants were made on it.
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { epochKey, shardEpochKey } from '../engine/keys';
import { tagForSlot } from './cluster-failover-watch';

/** How long the word holds: the first server should start within it (it then keeps the record). */
export const VOUCH_KEEP_MS = 10 * 60_000;

export interface Vouched {
  /** Masters now recorded as new ("host:port"). */
  recorded: string[];
}

async function runIdOf(node: Redis): Promise<string> {
  const runId = /^run_id:(\w+)/m.exec(String(await node.info('server')))?.[1];
  if (!runId) throw new Error(`${node.options.host}:${node.options.port} did not name its run_id (INFO server)`);
  return runId;
}

/** The first key under `prefix` on `node`, if any (SCAN, so a large Redis is not blocked). */
async function firstKeyUnder(node: Redis, prefix: string): Promise<string | undefined> {
  let cursor = '0';
  do {
    const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length > 0) return keys[0];
    cursor = next;
  } while (cursor !== '0');
  return undefined;
}

async function vouchNode(node: Redis, prefix: string, epochKey: string): Promise<void> {
  const where = `${node.options.host}:${node.options.port}`;
  const found = await firstKeyUnder(node, prefix);
  if (found !== undefined) {
    const why = found.includes(':epoch') ? 'a holdfast server has met it already' : 'locks were granted on it';
    throw new Error(`Redis at ${where} holds holdfast keys (${found}): ${why}, so it is not new; the servers wait out the quarantine instead`);
  }
  const runId = await runIdOf(node);
  await node.multi().hset(epochKey, 'master', runId, 'until', '0').pexpire(epochKey, VOUCH_KEEP_MS).exec();
}

/** Records every master of `redis` as new to holdfast, or throws saying why it is not. */
async function vouchForNewRedis(redis: Redis | Cluster, prefix: string): Promise<Vouched> {
  if (!(redis instanceof Cluster)) {
    await vouchNode(redis, prefix, epochKey(prefix));
    return { recorded: [`${redis.options.host}:${redis.options.port}`] };
  }
  const slots = redis.slots as string[][];
  const recorded: string[] = [];
  for (const node of redis.nodes('master')) {
    const name = `${node.options.host}:${node.options.port}`;
    const slot = slots.findIndex((owners) => owners?.[0] === name);
    if (slot < 0) continue; // serves no slot: no lock lives there
    await vouchNode(node, prefix, shardEpochKey(prefix, tagForSlot(slot)));
    recorded.push(name);
  }
  return { recorded };
}

function hostPort(node: string): { host: string; port: number } {
  const at = node.lastIndexOf(':');
  return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
}

/** Connects to a Redis URL (or Cluster seeds), records it as new to holdfast, and disconnects. */
export async function vouchFor(target: { url: string } | { clusterNodes: string[] }, prefix = 'hf', options: RedisOptions = {}): Promise<Vouched> {
  const redis =
    'url' in target
      ? new Redis(target.url, { ...options, maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true })
      : new Cluster(target.clusterNodes.map(hostPort), { clusterRetryStrategy: () => null, lazyConnect: true, redisOptions: options });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await vouchForNewRedis(redis, prefix);
  } finally {
    redis.disconnect();
  }
}

/**
 * For a Redis that provably holds every grant ever made on it (the embedded one on a new data
 * dir, or one that fsyncs every write): records its current master in the epoch record, keeping
 * any quarantine the record says is still running, so servers that meet it by URL need not wait.
 */
export async function recordCompleteMaster(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
  redis.on('error', () => {});
  try {
    await redis.connect();
    const key = epochKey(prefix);
    const until = (await redis.hget(key, 'until')) ?? '0';
    await redis
      .multi()
      .hset(key, 'master', await runIdOf(redis), 'until', until)
      .pexpire(key, VOUCH_KEEP_MS)
      .exec();
  } finally {
    redis.disconnect();
  }
}
