// Protected mode: `holdfast serve` on a non-loopback address refuses to start open to everyone.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secureChannel } from '../../clients/ts/credentials';
import { hashApiKey, newApiKey } from '../../src/auth/api-keys';
import { freePort } from '../../src/redis/embedded';
import { makeTestCerts, type TestCerts } from '../support/certs';
import { connect } from '../support/client';
import { startTestRedis, uniqueName, type TestRedis } from '../support/redis';
import { CLI } from '../support/server';

let redis: TestRedis;
let certs: TestCerts;
beforeAll(async () => {
  redis = await startTestRedis();
  certs = makeTestCerts();
});
afterAll(async () => {
  await redis?.cleanup();
  certs?.cleanup();
});

/** Runs serve on every interface; resolves once it listens (then stops it) or exits. */
function serveEverywhere(port: number, args: string[], whileListening: () => Promise<void> = async () => {}) {
  return new Promise<{ code: number | null; stderr: string; listened: boolean }>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'serve', '--listen', `0.0.0.0:${port}`, '--redis', redis.url, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let listened = false;
    child.stderr!.on('data', (d) => (stderr += d));
    child.stdout!.on('data', (d) => {
      if (listened || !String(d).includes('holdfast listening')) return;
      listened = true;
      whileListening().then(
        () => child.kill('SIGTERM'),
        (err) => (child.kill('SIGKILL'), reject(err)),
      );
    });
    child.once('close', (code) => resolve({ code, stderr, listened }));
  });
}

describe('protected mode', () => {
  it('refuses 0.0.0.0 without TLS, API keys or --insecure: exit 2 and one line saying what to add', async () => {
    const result = await serveEverywhere(await freePort(), []);
    expect(result).toMatchObject({ code: 2, listened: false });
    expect(result.stderr).toMatch(/^holdfast: protected mode: refusing to listen on 0\.0\.0\.0:\d+, a non-loopback address.*--tls-cert.*--insecure[^\n]*\n$/);
  });

  it('starts with --insecure and serves', async () => {
    const port = await freePort();
    const result = await serveEverywhere(port, ['--insecure'], async () => {
      const client = connect(`127.0.0.1:${port}`);
      expect((await client.acquire({ name: uniqueName() })).acquired).toBe(true);
      client.close();
    });
    expect(result).toMatchObject({ code: 0, listened: true });
  });

  it('starts with API keys, and then serves only callers that send one', async () => {
    const port = await freePort();
    const key = newApiKey();
    const file = join(certs.dir, 'keys.yaml');
    writeFileSync(file, `api-keys:\n  - { name: app, sha256: ${hashApiKey(key)}, namespace: app, role: lock }\n`);
    const result = await serveEverywhere(port, ['--config', file], async () => {
      const anonymous = connect(`127.0.0.1:${port}`);
      await expect(anonymous.acquire({ name: uniqueName() })).rejects.toMatchObject({ code: status.UNAUTHENTICATED });
      anonymous.close();
      const client = connect(`127.0.0.1:${port}`, secureChannel({ apiKey: key }).options as object);
      expect((await client.acquire({ name: uniqueName() })).acquired).toBe(true);
      client.close();
    });
    expect(result).toMatchObject({ code: 0, listened: true });
  });

  it('starts with TLS', async () => {
    const port = await freePort();
    const result = await serveEverywhere(port, ['--tls-cert', certs.file('server.crt'), '--tls-key', certs.file('server.key')], async () => {
      const client = connect(`127.0.0.1:${port}`, {}, credentials.createSsl(certs.pem('ca.crt')));
      expect((await client.acquire({ name: uniqueName() })).acquired).toBe(true);
      client.close();
    });
    expect(result).toMatchObject({ code: 0, listened: true });
  });
});
