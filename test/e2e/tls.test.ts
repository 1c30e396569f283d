// TLS and mutual TLS: real server processes serving certificates made by openssl, real clients
// (the SDK, raw grpc-js channels, the CLI) with the right and the wrong certificates, and a
// certificate rotated on disk under an open Hold stream.
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, renameSync } from 'node:fs';
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';
import { credentials, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient, type ConnectionSecurity } from '../../clients/ts/index';
import { freePort } from '../../src/redis/embedded';
import { makeTestCerts, type TestCerts } from '../support/certs';
import { connect } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName, type TestRedis } from '../support/redis';
import { CLI, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

let certs: TestCerts;
let redis: TestRedis;
let tlsServer: ServerProcess;
let mtlsServer: ServerProcess;

beforeAll(() => {
  certs = makeTestCerts();
  // The mutual-TLS server serves copies, which the rotation test replaces.
  copyFileSync(certs.file('server.crt'), certs.file('live.crt'));
  copyFileSync(certs.file('server.key'), certs.file('live.key'));
});
afterAll(() => certs?.cleanup());
const env = useServers(2, (i) =>
  i === 0
    ? ['--tls-cert', certs.file('server.crt'), '--tls-key', certs.file('server.key')]
    : [
        ...['--tls-cert', certs.file('live.crt'), '--tls-key', certs.file('live.key'), '--tls-client-ca', certs.file('ca.crt')],
        ...['--tls-reload-check-ms', '100'],
      ],
);
beforeAll(() => void ([redis, tlsServer, mtlsServer] = [env.redis, env.servers[0], env.servers[1]]));

/** Inspects a lock through the SDK with `security`; resolves with the gRPC code (0: it worked). */
async function inspectCode(addr: string, security: ConnectionSecurity): Promise<number> {
  const client = new HoldfastClient(addr, { ...security, callTimeoutMs: 5_000 });
  try {
    await client.inspect(uniqueName());
    return status.OK;
  } catch (err) {
    return (err as { code: number }).code;
  } finally {
    client.close();
  }
}

const trusted = () => ({ ca: certs.pem('ca.crt') });
const clientCert = (name = 'client') => ({ ...trusted(), cert: certs.pem(`${name}.crt`), key: certs.pem(`${name}.key`) });

describe('TLS', () => {
  it('serves clients that trust its CA, by IP or by the name in its certificate', async () => {
    expect(await inspectCode(tlsServer.addr, { tls: trusted() })).toBe(status.OK);
    expect(await inspectCode(`localhost:${tlsServer.port}`, { tls: trusted() })).toBe(status.OK);
  });

  it('fails for a client that trusts another CA, for a name the certificate lacks, and for plaintext', async () => {
    expect(await inspectCode(tlsServer.addr, { tls: { ca: certs.pem('other-ca.crt') } })).toBe(status.UNAVAILABLE);
    expect(await inspectCode(tlsServer.addr, { tls: { ...trusted(), serverName: 'not-the-server.example' } })).toBe(status.UNAVAILABLE);
    expect(await inspectCode(tlsServer.addr, {})).toBe(status.UNAVAILABLE);
  });
});

describe('mutual TLS', () => {
  it('serves a client with a certificate from the client CA', async () => {
    expect(await inspectCode(mtlsServer.addr, { tls: clientCert() })).toBe(status.OK);
  });

  it('refuses a client without a certificate, or with one from another CA', async () => {
    expect(await inspectCode(mtlsServer.addr, { tls: trusted() })).toBe(status.UNAVAILABLE);
    expect(await inspectCode(mtlsServer.addr, { tls: clientCert('other-client') })).toBe(status.UNAVAILABLE);
  });

  it('the CLI takes --tls-ca, --tls-cert and --tls-key (or HOLDFAST_TLS_*)', async () => {
    const run = (args: string[], env: Record<string, string> = {}) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [CLI, 'acquire', uniqueName(), '--addr', mtlsServer.addr, ...args], {
          env: { ...process.env, ...env },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr!.on('data', (d) => (stderr += d));
        child.once('close', (code) => resolve({ code, stderr }));
      });
    const flags = ['--tls-ca', certs.file('ca.crt'), '--tls-cert', certs.file('client.crt'), '--tls-key', certs.file('client.key')];
    expect(await run(flags)).toMatchObject({ code: 0 });
    const env = { HOLDFAST_TLS_CA: certs.file('ca.crt'), HOLDFAST_TLS_CERT: certs.file('client.crt'), HOLDFAST_TLS_KEY: certs.file('client.key') };
    expect(await run([], env)).toMatchObject({ code: 0 });
    expect(await run(['--tls-ca', certs.file('ca.crt')])).toMatchObject({ code: 1, stderr: expect.stringMatching(/UNAVAILABLE/) });
    expect(await run(['--tls-ca', certs.file('missing.crt')])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/--tls-ca: cannot read .*missing\.crt: ENOENT/),
    });
  });
});

/** The certificate the server presents to a new connection. */
function servedCertificate(port: number): Promise<PeerCertificate> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ALPNProtocols: ['h2'], ...clientCert(), servername: 'localhost' }, () => {
      resolve(socket.getPeerCertificate());
      socket.destroy();
    });
    socket.once('error', reject);
  });
}

/** Replaces a file the way deploy tools do: write aside, then rename over it. */
function replace(target: string, source: string): void {
  copyFileSync(certs.file(source), certs.file(`${target}.tmp`));
  renameSync(certs.file(`${target}.tmp`), certs.file(target));
}

describe('certificate rotation', () => {
  it('serves a certificate rotated on disk to new connections while an open Hold stream keeps renewing', async () => {
    const first = await servedCertificate(mtlsServer.port);
    const holder = connect(mtlsServer.addr, {}, credentials.createSsl(certs.pem('ca.crt'), certs.pem('client.key'), certs.pem('client.crt')));
    try {
      const stream = holder.hold({ name: uniqueName(), ttlMs: '1500' });
      await stream.next((e) => !!e.acquired);

      certs.issue('rotated', 'localhost');
      // Half-way (the certificate written, its key not yet): the old pair stays in service.
      replace('live.crt', 'rotated.crt');
      await waitFor('the server to report the mismatched pair', () => mtlsServer.logs.some((l) => /cannot be used yet/.test(l)));
      expect((await servedCertificate(mtlsServer.port)).serialNumber).toBe(first.serialNumber);

      replace('live.key', 'rotated.key');
      const rotated = await waitFor('the new certificate to be served', async () => {
        const served = await servedCertificate(mtlsServer.port);
        return served.serialNumber !== first.serialNumber ? served : undefined;
      });
      expect(rotated!.serialNumber).toBe(new X509Certificate(certs.pem('rotated.crt')).serialNumber);
      await waitFor('the reload to be logged', () => mtlsServer.logs.some((l) => /TLS certificate files changed: new connections/.test(l)));

      // The old connection's stream keeps renewing after the swap, and a new client connects.
      const renewedBefore = stream.events.filter((e) => e.renewed).length;
      await stream.next(() => stream.events.filter((e) => e.renewed).length >= renewedBefore + 3);
      expect(stream.events.some((e) => e.lost)).toBe(false);
      expect(await inspectCode(mtlsServer.addr, { tls: clientCert() })).toBe(status.OK);
      stream.call.cancel();
    } finally {
      holder.close();
    }
  });
});

describe('serve refuses unusable TLS settings with exit code 2', () => {
  const serve = (args: string[]) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [CLI, 'serve', '--redis', redis.url, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr!.on('data', (d) => (stderr += d));
      child.once('close', (code) => resolve({ code, stderr }));
    });

  it("a missing file, a key that is not the certificate's, a certificate without its key", async () => {
    const listen = ['--listen', `127.0.0.1:${await freePort()}`];
    expect(await serve([...listen, '--tls-cert', certs.file('nope.crt'), '--tls-key', certs.file('server.key')])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^holdfast: --tls-cert: cannot read .*nope\.crt: ENOENT\n$/),
    });
    expect(await serve([...listen, '--tls-cert', certs.file('server.crt'), '--tls-key', certs.file('client.key')])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^holdfast: --tls-cert\/--tls-key: .*key values mismatch\n$/),
    });
    expect(await serve([...listen, '--tls-cert', certs.file('server.crt')])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--tls-cert and --tls-key go together/),
    });
  });
});
