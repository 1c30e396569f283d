// holdfast skip-first-quarantine: for a first deployment on a Redis that has never served
// holdfast. Without it, the first server waits out the longest lease (--max-ttl-ms + margin)
// before its first grant, since it cannot tell a new Redis from one restarted without its data.
import { Command, Option } from 'commander';
import { Cluster, Redis } from 'ioredis';
import { EXIT_BAD_CONFIG } from '../config/env';
import { epochKey, shardEpochKey } from '../engine/keys';
import { VOUCH_KEEP_MS, vouchForNewRedis } from '../redis/vouch';

function hostPort(node: string): { host: string; port: number } {
  const at = node.lastIndexOf(':');
  return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
}

export function skipFirstQuarantineCommand(): Command {
  return new Command('skip-first-quarantine')
    .description(
      `declare a Redis new to holdfast (it holds no holdfast key), so servers started on it within ${VOUCH_KEEP_MS / 60_000} minutes grant at once; refused if any lock was ever granted on it. Never run it after a Redis restart: that is what the quarantine is for`,
    )
    .addOption(new Option('--redis <url>', 'the Redis (or the Sentinel-managed master) the servers will use').env('HOLDFAST_REDIS').conflicts('redisCluster'))
    .addOption(new Option('--redis-cluster <host:port,...>', 'seed nodes of a Redis Cluster').env('HOLDFAST_REDIS_CLUSTER'))
    .addOption(new Option('--key-prefix <prefix>', "the servers' --key-prefix").default('hf'))
    .action(async (opts: { redis?: string; redisCluster?: string; keyPrefix: string }) => {
      if (!opts.redis && !opts.redisCluster) {
        process.stderr.write('holdfast: skip-first-quarantine needs --redis URL or --redis-cluster host:port,...\n');
        process.exit(EXIT_BAD_CONFIG);
      }
      const redis = opts.redisCluster
        ? new Cluster(opts.redisCluster.split(',').map((s) => hostPort(s.trim())), { clusterRetryStrategy: () => null })
        : new Redis(opts.redis!, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
      redis.on('error', () => {});
      try {
        if (redis instanceof Redis) await redis.connect();
        else await new Promise<void>((resolve, reject) => redis.once('ready', resolve).once('error', reject));
        const { recorded } = await vouchForNewRedis(redis, opts.keyPrefix, epochKey(opts.keyPrefix), (tag) => shardEpochKey(opts.keyPrefix, tag));
        process.stdout.write(`recorded as new to holdfast: ${recorded.join(', ')} (servers started within ${VOUCH_KEEP_MS / 60_000} minutes grant at once)\n`);
      } catch (err) {
        process.stderr.write(`holdfast: skip-first-quarantine: ${(err as Error).message}\n`);
        process.exitCode = 1;
      } finally {
        redis.disconnect();
      }
    });
}
