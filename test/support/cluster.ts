// A real Redis Cluster of three masters (redis-server processes with --cluster-enabled), made
// with `redis-cli --cluster create`, on free loopback ports, stopped by PID; optionally with
// replicas, which the cluster promotes when their master fails.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/redis/embedded';
import { vouchFor } from '../../src/redis/vouch';
import { waitFor } from './wait';

export interface TestCluster {
  nodes: string[];
  servers: EmbeddedRedis[];
  cleanup(): Promise<void>;
}

export async function startTestCluster(size = 3, replicasPerMaster = 0, nodeArgs: string[] = []): Promise<TestCluster> {
  const root = mkdtempSync(join(tmpdir(), 'holdfast-cluster-'));
  const servers = await Promise.all(
    Array.from({ length: size * (1 + replicasPerMaster) }, (_, i) =>
      startEmbeddedRedis({
        dataDir: join(root, `node-${i}`),
        args: [
          '--save',
          '',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(root, `node-${i}`, 'nodes.conf'),
          '--cluster-node-timeout',
          '2000',
          ...nodeArgs,
        ],
      }),
    ),
  );
  const nodes = servers.map((s) => `127.0.0.1:${s.port}`);
  await promisify(execFile)('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', String(replicasPerMaster), '--cluster-yes']);
  // Every node must agree before slots can be served.
  for (const server of servers) {
    const client = new Redis(server.url);
    await waitFor(`cluster_state:ok on ${server.port}`, async () => /cluster_state:ok/.test(String(await client.call('CLUSTER', 'INFO'))), 20_000, 50);
    if (replicasPerMaster > 0 && /role:master/.test(String(await client.info('replication')))) {
      const online = async () => (String(await client.info('replication')).match(/state=online/g) ?? []).length;
      await waitFor(`${replicasPerMaster} replicas online on ${server.port}`, async () => (await online()) === replicasPerMaster, 20_000, 50);
    }
    client.disconnect();
  }
  // New to holdfast: servers grant at once (a shard that fails over later is quarantined).
  await vouchFor({ clusterNodes: nodes });
  return {
    nodes,
    servers,
    async cleanup() {
      await Promise.all(servers.map((s) => s.stop()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
