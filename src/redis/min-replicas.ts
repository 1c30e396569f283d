// Start-up check for --sync-replicas. WAIT makes a grant wait for replicas, but a master that is
// cut off from its replicas (a partition Sentinel resolves by promoting one of them) would still
// accept every other write, each thrown away when it rejoins as a replica. min-replicas-to-write
// makes such a master refuse writes (NOREPLICAS) once it cannot reach its replicas.
import { Cluster, type Redis } from 'ioredis';

/**
 * The lowest min-replicas-to-write among the masters (every shard's, on a Cluster), or
 * undefined when it cannot be read (CONFIG renamed or disabled, Redis not reachable).
 */
export async function minReplicasToWrite(redis: Redis | Cluster): Promise<number | undefined> {
  const masters = redis instanceof Cluster ? redis.nodes('master') : [redis];
  try {
    const values = await Promise.all(
      masters.map(async (node) => Number(((await node.config('GET', 'min-replicas-to-write')) as string[])[1])),
    );
    return values.length > 0 && values.every(Number.isFinite) ? Math.min(...values) : undefined;
  } catch {
    return undefined;
  }
}
