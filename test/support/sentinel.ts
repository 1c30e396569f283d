// A real Sentinel deployment on loopback: one master, two replicas and three Sentinels
// (`redis-server <conf> --sentinel`), down-after 1000 ms, each on a free port, stopped by PID.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/redis/embedded';
import { vouchFor } from '../../src/redis/vouch';
import { waitFor } from './wait';

export const MASTER_NAME = 'holdfast-test';

export interface TestSentinels {
  /** Data nodes; nodes[0] is the first master. */
  nodes: EmbeddedRedis[];
  sentinels: EmbeddedRedis[];
  /** host:port of each Sentinel, for --redis-sentinels. */
  sentinelAddrs: string[];
  /** The data node the Sentinels name as master right now. */
  master(): Promise<EmbeddedRedis>;
  /** A plain client of one node (closed by cleanup). */
  client(node: EmbeddedRedis): Redis;
  /**
   * Makes the master's next writes reach no replica: stops the replicas (SIGSTOP) and cuts their
   * links (CLIENT KILL TYPE replica), so they cannot resync. Returns the replicas, to resume
   * with SIGCONT before Sentinel would count them down (down-after 1000 ms).
   */
  cutReplicas(master: EmbeddedRedis): Promise<EmbeddedRedis[]>;
  /** Resolves with the new master once every Sentinel names another node than `old`. */
  failedOverFrom(old: EmbeddedRedis, timeoutMs?: number): Promise<EmbeddedRedis>;
  cleanup(): Promise<void>;
}

export interface SentinelOptions {
  /** Extra redis-server arguments for every data node (they are all masters some day). */
  nodeArgs?: string[];
  /** The data nodes' password (requirepass, and masterauth between them). */
  password?: string;
  /** The Sentinels' own password (requirepass, and sentinel-pass between them). */
  sentinelPassword?: string;
  /** Record the master as new to holdfast (skip-first-quarantine); default true. */
  vouch?: boolean;
}

// min-replicas-to-write 1: a master cut off from its replicas stops accepting writes, as holdfast
// asks of a Sentinel deployment (it refuses to start behind one where it is 0).
const NODE_ARGS = ['--save', '', '--repl-diskless-sync-delay', '0', '--repl-timeout', '5', '--min-replicas-to-write', '1'];

export async function startTestSentinels(options: SentinelOptions = {}): Promise<TestSentinels> {
  const root = mkdtempSync(join(tmpdir(), 'holdfast-sentinel-'));
  const clients: Redis[] = [];
  const sentinels: EmbeddedRedis[] = [];
  const client = (node: EmbeddedRedis) => {
    const password = sentinels.includes(node) ? options.sentinelPassword : options.password;
    const c = new Redis(node.port, '127.0.0.1', { maxRetriesPerRequest: 1, connectTimeout: 1000, retryStrategy: () => 200, password });
    c.on('error', () => {});
    clients.push(c);
    return c;
  };
  const auth = options.password ? ['--requirepass', options.password, '--masterauth', options.password] : [];
  const args = [...NODE_ARGS, ...auth, ...(options.nodeArgs ?? [])];
  const master = await startEmbeddedRedis({ dataDir: join(root, 'node-0'), args });
  const replicas = await Promise.all(
    [1, 2].map((i) => startEmbeddedRedis({ dataDir: join(root, `node-${i}`), args: [...args, '--replicaof', '127.0.0.1', String(master.port)] })),
  );
  const nodes = [master, ...replicas];
  try {
    const masterClient = client(master);
    await waitFor('both replicas online', async () => (String(await masterClient.info('replication')).match(/state=online/g) ?? []).length === 2, 20_000, 50);
    for (let i = 0; i < 3; i++) {
      const dir = join(root, `sentinel-${i}`);
      mkdirSync(dir, { recursive: true });
      const conf = join(dir, 'sentinel.conf');
      writeFileSync(
        conf,
        [
          `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${master.port} 2`,
          `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
          `sentinel failover-timeout ${MASTER_NAME} 4000`,
          `sentinel parallel-syncs ${MASTER_NAME} 2`,
          ...(options.password ? [`sentinel auth-pass ${MASTER_NAME} ${options.password}`] : []),
          ...(options.sentinelPassword ? [`requirepass ${options.sentinelPassword}`, `sentinel sentinel-pass ${options.sentinelPassword}`] : []),
          '',
        ].join('\n'),
      );
      sentinels.push(await startEmbeddedRedis({ dataDir: dir, sentinelConfig: conf }));
    }
    // A failover needs the Sentinels to know the replicas and each other (hello messages every 2 s).
    for (const sentinel of sentinels) {
      const c = client(sentinel);
      await waitFor(
        `Sentinel ${sentinel.port} to know 2 replicas and 2 other Sentinels`,
        async () =>
          ((await c.call('SENTINEL', 'REPLICAS', MASTER_NAME)) as unknown[]).length === 2 &&
          ((await c.call('SENTINEL', 'SENTINELS', MASTER_NAME)) as unknown[]).length === 2,
        20_000,
        100,
      );
    }
  } catch (err) {
    clients.forEach((c) => c.disconnect());
    await Promise.all([...nodes, ...sentinels].map((n) => n.stop()));
    throw err;
  }
  // New to holdfast: servers grant at once (the record replicates; a promoted replica is quarantined).
  if (options.vouch !== false) await vouchFor({ url: options.password ? `redis://:${options.password}@127.0.0.1:${master.port}` : master.url });
  const sentinelClients = sentinels.map(client);
  const masterPort = async (c: Redis) => Number(((await c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME)) as string[])[1]);
  const byPort = (port: number) => nodes.find((n) => n.port === port)!;
  return {
    nodes,
    sentinels,
    sentinelAddrs: sentinels.map((s) => `127.0.0.1:${s.port}`),
    client,
    async master() {
      return byPort(await masterPort(sentinelClients[0]));
    },
    async cutReplicas(master) {
      const replicas = nodes.filter((n) => n !== master && n.process.exitCode === null && n.process.signalCode === null);
      replicas.forEach((r) => process.kill(r.pid, 'SIGSTOP'));
      await client(master).call('CLIENT', 'KILL', 'TYPE', 'replica');
      return replicas;
    },
    async failedOverFrom(old, timeoutMs = 30_000) {
      const port = await waitFor(
        `a failover away from ${old.port}`,
        async () => {
          const ports = await Promise.all(sentinelClients.map((c) => masterPort(c).catch(() => old.port)));
          return ports.every((p) => p === ports[0] && p !== old.port) ? ports[0] : 0;
        },
        timeoutMs,
        50,
      );
      const promoted = byPort(port);
      const c = client(promoted);
      await waitFor(`${port} to act as master`, async () => /role:master/.test(String(await c.info('replication'))), timeoutMs, 50);
      return promoted;
    },
    async cleanup() {
      clients.forEach((c) => c.disconnect());
      for (const node of [...nodes, ...sentinels]) {
        try {
          process.kill(node.pid, 'SIGCONT'); // a stopped process cannot act on SIGTERM
        } catch {
          // already gone
        }
      }
      await Promise.all([...sentinels, ...nodes].map((n) => n.stop()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
