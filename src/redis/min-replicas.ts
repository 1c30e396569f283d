// Start-up checks of the masters' min-replicas settings. WAIT makes a grant wait for replicas,
// but a master cut off from its replicas (a partition that Sentinel resolves by promoting one of
// them) would still accept every other write, each thrown away when it rejoins as a replica;
// without WAIT it would go on granting too. min-replicas-to-write makes such a master refuse
// writes (NOREPLICAS) once no replica has acknowledged for min-replicas-max-lag seconds.
import { Cluster, type Redis } from 'ioredis';
import { listedReplicas } from './replica-acks';

export interface MinReplicas {
  /** The lowest min-replicas-to-write among the masters. */
  toWrite: number;
  /** The longest min-replicas-max-lag among them, in ms: how long a cut-off master still accepts writes. */
  maxLagMs: number;
}

/** Every master's settings (every shard's, on a Cluster), or undefined when they cannot be read (CONFIG disabled, Redis away). */
export async function minReplicas(redis: Redis | Cluster): Promise<MinReplicas | undefined> {
  const masters = redis instanceof Cluster ? redis.nodes('master') : [redis];
  try {
    const settings = await Promise.all(
      masters.map(async (node) => {
        const reply = (await node.config('GET', 'min-replicas-*')) as string[];
        const value = (name: string) => Number(reply[reply.indexOf(name) + 1]);
        return { toWrite: value('min-replicas-to-write'), maxLagMs: value('min-replicas-max-lag') * 1000 };
      }),
    );
    if (settings.length === 0 || settings.some((s) => !Number.isFinite(s.toWrite) || !Number.isFinite(s.maxLagMs))) return undefined;
    return { toWrite: Math.min(...settings.map((s) => s.toWrite)), maxLagMs: Math.max(...settings.map((s) => s.maxLagMs)) };
  } catch {
    return undefined;
  }
}

/** Whether any master has a replica: only then can a partition promote one behind its back. */
async function hasReplicas(redis: Redis | Cluster): Promise<boolean> {
  if (redis instanceof Cluster) return redis.nodes('slave').length > 0;
  return ((await listedReplicas(redis)) ?? 0) > 0; // unknown (Redis away): nothing to warn of yet
}

/**
 * What is wrong with the masters' settings for the protection in force, if anything: with
 * replica acknowledgement (the default behind Sentinel), min-replicas-to-write 0 is refused: a
 * master cut off from its replicas would go on accepting writes that are thrown away when a
 * replica is promoted. With the quarantine alone, on masters that have replicas, min-replicas-to-write
 * 0 or a max lag longer than the margin is warned of (a cut-off master would grant past the quarantine).
 */
export async function replicaSettingsProblem(
  redis: Redis | Cluster,
  asked: { syncReplicas: boolean; quarantine: boolean; quarantineMarginMs: number },
): Promise<{ message: string; refuse?: boolean } | undefined> {
  if (!asked.syncReplicas && !(asked.quarantine && (await hasReplicas(redis)))) return undefined;
  const settings = await minReplicas(redis);
  if (!settings) return { message: "could not read the master's min-replicas-to-write (CONFIG GET); make sure it is at least 1" };
  if (asked.syncReplicas && settings.toWrite === 0) {
    return {
      refuse: true,
      message:
        "the master's min-replicas-to-write is 0, so a master cut off from its replicas goes on accepting writes that are thrown away when a replica is promoted (a lock granted twice): set min-replicas-to-write 1 (or more) on every Redis node",
    };
  }
  if (asked.syncReplicas || !asked.quarantine) return undefined;
  if (settings.toWrite === 0) {
    return {
      message:
        "the master's min-replicas-to-write is 0, so a master cut off by a partition may go on granting after a replica is promoted; set it to at least 1 on every node",
    };
  }
  if (settings.maxLagMs > asked.quarantineMarginMs) {
    return {
      message: `--quarantine-margin-ms (${asked.quarantineMarginMs}) is shorter than min-replicas-max-lag (${settings.maxLagMs} ms), how long a master cut off by a partition still grants; raise the margin or lower the lag`,
    };
  }
  return undefined;
}
