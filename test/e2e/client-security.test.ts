// What the clients send: the API key as `authorization: Bearer <key>` on every call (unary and
// Hold, SDK and CLI), and over mutual TLS the certificate whose subject the server reads.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient } from '../../clients/ts/index';
import { serverTls } from '../../src/tls/server-credentials';
import { makeTestCerts, type TestCerts } from '../support/certs';
import { startRecordingServer, type RecordingServer } from '../support/recording-server';
import { CLI } from '../support/server';

let certs: TestCerts;
let plain: RecordingServer;
let mutual: RecordingServer;
let serverOnly: RecordingServer;

beforeAll(async () => {
  certs = makeTestCerts();
  const files = { certFile: certs.file('server.crt'), keyFile: certs.file('server.key') };
  [plain, mutual, serverOnly] = await Promise.all([
    startRecordingServer(),
    startRecordingServer(serverTls({ ...files, clientCaFile: certs.file('ca.crt') }, 60_000).credentials),
    startRecordingServer(serverTls(files, 60_000).credentials),
  ]);
});
afterAll(() => {
  for (const server of [plain, mutual, serverOnly]) server?.stop();
  certs?.cleanup();
});

/** Runs the CLI; resolves with its exit code and stderr. */
function holdfast(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    child.once('close', (code) => resolve({ code, stderr }));
  });
}

describe('API key', () => {
  it('the SDK sends it on unary calls and on its Session stream, and sends nothing without one', async () => {
    const client = new HoldfastClient(plain.addr, { apiKey: 'sdk-key-1' });
    await expect(client.inspect('a')).rejects.toMatchObject({ details: 'recorded by the test server' });
    await expect(client.hold('a')).rejects.toThrow();
    client.close();
    const keyless = new HoldfastClient(plain.addr);
    await expect(keyless.inspect('b')).rejects.toThrow();
    keyless.close();
    expect(plain.calls.slice(-3)).toEqual([
      { method: 'inspect', authorization: ['Bearer sdk-key-1'], subject: undefined },
      { method: 'session', authorization: ['Bearer sdk-key-1'], subject: undefined },
      { method: 'inspect', authorization: [], subject: undefined },
    ]);
  });

  it('the CLI sends --api-key or HOLDFAST_API_KEY', async () => {
    expect(await holdfast(['inspect', 'x', '--addr', plain.addr, '--api-key', 'cli-flag-key'])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/PERMISSION_DENIED/),
    });
    expect(await holdfast(['exec', 'x', '--addr', plain.addr, '--', 'true'], { HOLDFAST_API_KEY: 'cli-env-key' })).toMatchObject({ code: 1 });
    expect(plain.calls.slice(-2).map((c) => [c.method, c.authorization])).toEqual([
      ['inspect', ['Bearer cli-flag-key']],
      ['session', ['Bearer cli-env-key']],
    ]);
  });
});

describe('client certificates', () => {
  it("over mutual TLS the server reads the client certificate's subject", async () => {
    const client = new HoldfastClient(mutual.addr, {
      tls: { ca: certs.pem('ca.crt'), cert: certs.pem('client.crt'), key: certs.pem('client.key') },
      apiKey: 'k',
    });
    await expect(client.inspect('a')).rejects.toMatchObject({ details: 'recorded by the test server' });
    client.close();
    expect(mutual.calls.at(-1)).toEqual({
      method: 'inspect',
      authorization: ['Bearer k'],
      subject: { commonName: 'test-client', text: 'O=holdfast-test,CN=test-client', attributes: { O: ['holdfast-test'], CN: ['test-client'] } },
    });
  });

  it('without a client CA there is no subject, even when the client offers a certificate', async () => {
    const client = new HoldfastClient(serverOnly.addr, { tls: { ca: certs.pem('ca.crt'), cert: certs.pem('client.crt'), key: certs.pem('client.key') } });
    await expect(client.inspect('a')).rejects.toMatchObject({ details: 'recorded by the test server' });
    client.close();
    expect(serverOnly.calls.at(-1)).toEqual({ method: 'inspect', authorization: [], subject: undefined });
  });

  it('the CLI over TLS prints no Node warning, and checks --tls-server-name', async () => {
    const tls = ['--tls-ca', certs.file('ca.crt'), '--tls-cert', certs.file('client.crt'), '--tls-key', certs.file('client.key')];
    expect(await holdfast(['status', 'x', '--addr', mutual.addr, ...tls])).toEqual({
      code: 1,
      stderr: 'holdfast: PERMISSION_DENIED: recorded by the test server\n',
    });
    expect(await holdfast(['status', 'x', '--addr', mutual.addr, ...tls, '--tls-server-name', 'localhost'])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/PERMISSION_DENIED/),
    });
    expect(await holdfast(['status', 'x', '--addr', mutual.addr, ...tls, '--tls-server-name', 'elsewhere.example'])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/UNAVAILABLE/),
    });
  });
});
