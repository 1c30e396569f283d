// Redis connection security: real redis-servers that want an ACL user, a password, TLS (with
// the test CA), a Cluster with a password, Sentinels and nodes with passwords; real holdfast servers given the credentials by URL,
// env and flag, and the wrong ones. No server log line may carry a password.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startEmbeddedRedis, type EmbeddedRedis } from '../../src/redis/embedded';
import { vouchFor } from '../../src/redis/vouch';
import { makeTestCerts, type TestCerts } from '../support/certs';
import { connect } from '../support/client';
import { startTestCluster, type TestCluster } from '../support/cluster';
import { MASTER_NAME, startTestSentinels, type TestSentinels } from '../support/sentinel';
import { uniqueName } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';

const PASSWORD = `pw-${randomBytes(8).toString('hex')}`;
const USER = 'holdfast-app';

let certs: TestCerts;
let dataDir: string;
/** TLS only (no plaintext port), the default user off, USER with PASSWORD. */
let tlsRedis: EmbeddedRedis;
/** Plaintext, the default user with PASSWORD (requirepass). */
let passwordRedis: EmbeddedRedis;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  certs = makeTestCerts();
  dataDir = mkdtempSync(join(tmpdir(), 'holdfast-redis-security-'));
  const tlsPort = await freePort();
  [tlsRedis, passwordRedis] = await Promise.all([
    startEmbeddedRedis({
      dataDir: join(dataDir, 'tls'),
      port: tlsPort,
      args: [
        ...['--save', '', '--port', '0', '--tls-port', String(tlsPort), '--tls-auth-clients', 'no'],
        ...['--tls-cert-file', certs.file('server.crt'), '--tls-key-file', certs.file('server.key'), '--tls-ca-cert-file', certs.file('ca.crt')],
        ...['--user', 'default', 'off', '--user', USER, 'on', `>${PASSWORD}`, '~*', '&*', '+@all'],
      ],
    }),
    startEmbeddedRedis({ dataDir: join(dataDir, 'password'), args: ['--save', '', '--requirepass', PASSWORD] }),
  ]);
  await vouchFor({ url: `rediss://${USER}:${PASSWORD}@127.0.0.1:${tlsPort}` }, 'hf', { tls: { ca: certs.pem('ca.crt') } });
  await vouchFor({ url: `redis://:${PASSWORD}@127.0.0.1:${passwordRedis.port}` });
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await Promise.all([tlsRedis?.stop(), passwordRedis?.stop()]);
  rmSync(dataDir, { recursive: true, force: true });
  certs?.cleanup();
});

async function serve(redisUrl: string | undefined, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const server = await startServerProcess(redisUrl, args, env);
  servers.push(server);
  return server;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The details of the UNAVAILABLE an Acquire through `server` gets. */
async function unavailableDetails(server: ServerProcess): Promise<string> {
  const client = connect(server.addr);
  try {
    await client.acquire({ name: uniqueName(), ttlMs: '5000' }, 5_000);
    return 'granted';
  } catch (err) {
    expect((err as { code: number }).code).toBe(status.UNAVAILABLE);
    return (err as { details: string }).details;
  } finally {
    client.close();
  }
}

/** Takes and releases a lock through `server`; resolves with the gRPC code (0: it worked). */
async function lockRoundTrip(server: ServerProcess): Promise<number> {
  const client = connect(server.addr);
  try {
    const name = uniqueName();
    const grant = await client.acquire({ name, ttlMs: '5000' }, 5_000);
    expect(grant.acquired).toBe(true);
    expect((await client.release({ name, token: grant.token })).released).toBe(true);
    return status.OK;
  } catch (err) {
    return (err as { code: number }).code;
  } finally {
    client.close();
  }
}

const tlsUrl = () => `rediss://127.0.0.1:${tlsRedis.port}`;

describe('Redis over TLS with an ACL user', () => {
  it('connects with the user and password from env and the CA from --redis-tls-ca', async () => {
    const server = await serve(tlsUrl(), ['--redis-tls-ca', certs.file('ca.crt')], { HOLDFAST_REDIS_USERNAME: USER, HOLDFAST_REDIS_PASSWORD: PASSWORD });
    expect(await lockRoundTrip(server)).toBe(status.OK);
  });

  it('connects with the user and password in the URL, and with HOLDFAST_REDIS_TLS_CA', async () => {
    const server = await serve(`rediss://${USER}:${PASSWORD}@127.0.0.1:${tlsRedis.port}`, [], { HOLDFAST_REDIS_TLS_CA: certs.file('ca.crt') });
    expect(await lockRoundTrip(server)).toBe(status.OK);
  });

  it('answers UNAVAILABLE with a wrong password or without the CA, and logs the URL with its password masked', async () => {
    const [wrongPassword, wrongCa] = await Promise.all([
      serve(`rediss://${USER}:not-${PASSWORD}@127.0.0.1:${tlsRedis.port}`, ['--redis-tls-ca', certs.file('ca.crt')]),
      serve(tlsUrl(), ['--redis-password', PASSWORD, '--redis-username', USER]),
    ]);
    expect(await lockRoundTrip(wrongPassword)).toBe(status.UNAVAILABLE);
    expect(await lockRoundTrip(wrongCa)).toBe(status.UNAVAILABLE);
    const where = `Redis at 127.0.0.1:${tlsRedis.port} (TLS)`;
    // The client's status and the log name the address and the cause in words, never ioredis's text.
    expect(await unavailableDetails(wrongPassword)).toMatch(new RegExp(`: ${escapeRegExp(where)} is unavailable: authentication failed`));
    expect(await unavailableDetails(wrongCa)).toMatch(new RegExp(`: ${escapeRegExp(where)} is unavailable: TLS handshake failed`));
    const notReachable = wrongPassword.logs.find((l) => l.includes(`cannot reach ${where}`));
    expect(JSON.parse(notReachable!).cause).toMatch(/^authentication failed/);
    expect(wrongCa.logs.some((l) => l.includes(`cannot reach ${where}: TLS handshake failed`))).toBe(true);
    for (const line of [...wrongPassword.logs, ...wrongCa.logs]) expect(line).not.toContain(PASSWORD);
  });
});

describe('Redis with a password (requirepass)', () => {
  it('connects with the password in the URL, and answers UNAVAILABLE without it', async () => {
    const [withPassword, without] = await Promise.all([serve(`redis://:${PASSWORD}@127.0.0.1:${passwordRedis.port}`), serve(passwordRedis.url)]);
    expect(await lockRoundTrip(withPassword)).toBe(status.OK);
    expect(await lockRoundTrip(without)).toBe(status.UNAVAILABLE);
  });
});

describe('Redis Cluster with a password', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startTestCluster(3);
    // Set after the cluster is made: the cluster bus does not use it, redis-cli --cluster create would need it.
    for (const node of cluster.servers) {
      const client = new Redis(node.url);
      await client.config('SET', 'requirepass', PASSWORD);
      client.disconnect();
    }
  }, 60_000);
  afterAll(() => cluster?.cleanup());

  it('connects with HOLDFAST_REDIS_PASSWORD, and answers UNAVAILABLE without it', async () => {
    const cluster_ = cluster.nodes.join(',');
    const [withPassword, without] = await Promise.all([
      serve(undefined, ['--redis-cluster', cluster_], { HOLDFAST_REDIS_PASSWORD: PASSWORD }),
      serve(undefined, ['--redis-cluster', cluster_]),
    ]);
    expect(await lockRoundTrip(withPassword)).toBe(status.OK);
    expect(await lockRoundTrip(without)).toBe(status.UNAVAILABLE);
  });
});

describe('Redis Sentinel with passwords for the nodes and for the Sentinels', () => {
  const SENTINEL_PASSWORD = `sentinel-${PASSWORD}`;
  let deployment: TestSentinels;
  beforeAll(async () => {
    deployment = await startTestSentinels({ password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
  }, 60_000);
  afterAll(() => deployment?.cleanup());

  it('connects with HOLDFAST_REDIS_PASSWORD and HOLDFAST_REDIS_SENTINEL_PASSWORD, and answers UNAVAILABLE without the latter', async () => {
    const args = ['--redis-sentinels', deployment.sentinelAddrs.join(','), '--redis-master', MASTER_NAME];
    const [withBoth, withoutSentinelPassword] = await Promise.all([
      serve(undefined, args, { HOLDFAST_REDIS_PASSWORD: PASSWORD, HOLDFAST_REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD }),
      serve(undefined, args, { HOLDFAST_REDIS_PASSWORD: PASSWORD }),
    ]);
    expect(await lockRoundTrip(withBoth)).toBe(status.OK);
    expect(await lockRoundTrip(withoutSentinelPassword)).toBe(status.UNAVAILABLE);
  });
});

describe('logs', () => {
  it('no server logged the password', () => {
    const lines = servers.flatMap((s) => s.logs);
    expect(lines.length).toBeGreaterThan(servers.length * 2);
    expect(lines.filter((l) => l.includes(PASSWORD))).toEqual([]);
  });
});
