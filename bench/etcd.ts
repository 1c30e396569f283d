// etcd for the benchmarks: a private single-member etcd (Debian's etcd-server) on free loopback
// ports, and a client of its v3 Lock service over gRPC, the API a gRPC user would pick instead of
// holdfast. Its data directory is on /dev/shm, so its fsyncs cost what a Redis without persistence
// costs (etcd 3.4 has no --unsafe-no-fsync); a disk-backed etcd would be slower.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, loadPackageDefinition, Metadata, type Client, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { freePort } from '../src/redis/embedded';
import { ROOT, sleep } from './support';

export interface EtcdProcess {
  /** host:port of its client (gRPC) listener. */
  addr: string;
  pid: number;
  stop(): Promise<void>;
}

/** Whether the etcd binary is installed (apt-get install -y etcd-server). */
export function etcdInstalled(): boolean {
  return spawnSync('etcd', ['--version'], { stdio: 'ignore' }).status === 0;
}

export async function startEtcd(): Promise<EtcdProcess> {
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const dataDir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'holdfast-bench-etcd-'));
  const client = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const child: ChildProcess = spawn(
    'etcd',
    [
      '--name',
      'bench',
      '--data-dir',
      dataDir,
      '--log-level',
      'error',
      '--listen-client-urls',
      client,
      '--advertise-client-urls',
      client,
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--initial-cluster',
      `bench=${peer}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4096)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const etcd: EtcdProcess = {
    addr: `127.0.0.1:${clientPort}`,
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(force);
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  // Ready once a lease can be granted (the member has elected itself leader).
  const probe = etcdLockClient(etcd.addr);
  try {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`etcd exited before it served: ${stderr}`);
      try {
        await probe.grantLease(5);
        break;
      } catch (err) {
        if (i > 100) throw new Error(`etcd did not serve within 10 s: ${(err as Error).message}`);
        await sleep(100);
      }
    }
  } catch (err) {
    await etcd.stop();
    throw err;
  } finally {
    probe.close();
  }
  return etcd;
}

type Callback<T> = (err: ServiceError | null, res: T) => void;
type Unary = (req: object, md: Metadata, opts: { deadline: number }, cb: Callback<Record<string, unknown>>) => void;

const PROTO_DIR = join(ROOT, 'bench');

/**
 * A client of etcd's Lease and Lock services on one channel. A lock is held under a lease (as
 * etcd's own clients do); Lock blocks until the lock is held, in revision (arrival) order.
 */
export function etcdLockClient(addr: string, channel?: Client) {
  const definition = loadSync(['etcd-lock.proto', 'etcd-v3lock.proto'], { includeDirs: [PROTO_DIR], longs: String, keepCase: true });
  const loaded = loadPackageDefinition(definition) as unknown as {
    etcdserverpb: { Lease: new (addr: string, creds: unknown, options: object) => Client };
    v3lockpb: { Lock: new (addr: string, creds: unknown, options: object) => Client };
  };
  const options = channel ? { channelOverride: channel.getChannel() } : { 'grpc.use_local_subchannel_pool': 1 };
  const lease = new loaded.etcdserverpb.Lease(addr, credentials.createInsecure(), options);
  const lock = new loaded.v3lockpb.Lock(addr, credentials.createInsecure(), { channelOverride: lease.getChannel() });
  const call = (client: Client, method: string, req: object, deadlineMs = 120_000) =>
    new Promise<Record<string, unknown>>((resolve, reject) =>
      (client as unknown as Record<string, Unary>)[method].call(client, req, new Metadata(), { deadline: Date.now() + deadlineMs }, (err, res) =>
        err ? reject(err) : resolve(res),
      ),
    );
  return {
    channel: lease as Client,
    /** A lease of `ttlSeconds`; its id. */
    grantLease: async (ttlSeconds: number) => String((await call(lease, 'LeaseGrant', { TTL: ttlSeconds, ID: 0 })).ID),
    /** Holds `name` under `leaseId`; resolves with the key that unlocks it. */
    lock: async (name: string, leaseId: string) => (await call(lock, 'Lock', { name: Buffer.from(name), lease: leaseId })).key as Buffer,
    unlock: (key: Buffer) => call(lock, 'Unlock', { key }),
    close: () => {
      if (!channel) lease.close();
    },
  };
}

export function etcdLockName(): string {
  return `bench-etcd-${randomBytes(4).toString('hex')}`;
}
