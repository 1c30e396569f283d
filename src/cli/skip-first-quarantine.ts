// holdfast skip-first-quarantine: for a first deployment on a Redis that has never served
// holdfast. Without it, the first server waits out the longest lease (--max-ttl-ms + margin)
// before its first grant, since it cannot tell a new Redis from one restarted without its data.
import { Command, Option } from 'commander';
import { EXIT_BAD_CONFIG } from '../config/env';
import { VOUCH_KEEP_MS, vouchFor } from '../redis/vouch';

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
      const target = opts.redisCluster ? { clusterNodes: opts.redisCluster.split(',').map((s) => s.trim()) } : { url: opts.redis! };
      try {
        const { recorded } = await vouchFor(target, opts.keyPrefix);
        process.stdout.write(`recorded as new to holdfast: ${recorded.join(', ')} (servers started within ${VOUCH_KEEP_MS / 60_000} minutes grant at once)\n`);
      } catch (err) {
        process.stderr.write(`holdfast: skip-first-quarantine: ${(err as Error).message}\n`);
        process.exitCode = 1;
      }
    });
}
