// A client pointed at the wrong place gets one line naming the address and the cause in words,
// from the CLI and from the SDK: real server processes (plaintext with its HTTP listener, TLS,
// mutual TLS), a port nothing listens on, and the built CLI as a child process.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient, InvalidAddressError, type ConnectionSecurity } from '../../clients/ts/index';
import { freePort } from '../../src/redis/embedded';
import { makeTestCerts, type TestCerts } from '../support/certs';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { CLI, type ServerProcess } from '../support/server';

let certs: TestCerts;
let plain: ServerProcess;
let tls: ServerProcess;
let mutual: ServerProcess;
let httpAddr: string;
let nothingAddr: string;

beforeAll(async () => {
  certs = makeTestCerts();
  httpAddr = `127.0.0.1:${await freePort()}`;
});
afterAll(() => certs?.cleanup());
const env = useServers(3, (i) => {
  const serverTls = ['--tls-cert', certs.file('server.crt'), '--tls-key', certs.file('server.key')];
  return [['--http-listen', httpAddr], serverTls, [...serverTls, '--tls-client-ca', certs.file('ca.crt')]][i];
});
beforeAll(async () => {
  [plain, tls, mutual] = env.servers;
  nothingAddr = `127.0.0.1:${await freePort()}`;
});

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI with no HOLDFAST_ variables from this environment. */
function holdfast(...args: string[]): Promise<Finished> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('HOLDFAST_')));
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], { env, timeout: 60_000 }, (_err, stdout, stderr) =>
      resolve({ code: child.exitCode, stdout, stderr }),
    );
  });
}

/** The one line a failed command printed (and that it printed only one). */
function oneLine(run: Finished): string {
  expect(run.code, run.stdout + run.stderr).toBe(1);
  const lines = run.stderr.trim().split('\n');
  expect(lines, run.stderr).toHaveLength(1);
  return lines[0];
}

const mtlsFlags = () => ['--tls-ca', certs.file('ca.crt'), '--tls-cert', certs.file('client.crt'), '--tls-key', certs.file('client.key')];

describe('the CLI', () => {
  it('reaches the right addresses (the control for every case below)', async () => {
    for (const args of [
      ['--addr', plain.addr],
      ['--addr', tls.addr, '--tls-ca', certs.file('ca.crt')],
      ['--addr', mutual.addr, ...mtlsFlags()],
    ]) {
      const run = await holdfast('inspect', uniqueName(), ...args);
      expect(run, run.stderr).toMatchObject({ code: 0, stderr: '' });
    }
  });

  it.each([
    [
      'an address without a port',
      () => ['--addr', '127.0.0.1'],
      /^error: option '--addr <host:port>' argument '127\.0\.0\.1' is invalid\. no port: give host:port/,
    ],
    [
      'an address with a scheme',
      () => ['--addr', `http://${plain.addr}`],
      /^error: option '--addr <host:port>' argument 'http:\/\/127\.0\.0\.1:\d+' is invalid\. a URL: give host:port, e\.g\. 127\.0\.0\.1:50051, without "http:\/\/"/,
    ],
    ['a bare IPv6 address', () => ['--addr', '::1'], /'--addr <host:port>' argument '::1' is invalid\. an IPv6 address needs brackets/],
    [
      'a port out of range',
      () => ['--addr', '127.0.0.1:70000'],
      /'--addr <host:port>' argument '127\.0\.0\.1:70000' is invalid\. port "70000" is not a number from 1 to 65535/,
    ],
    [
      'a port nothing listens on',
      () => ['--addr', nothingAddr],
      () => new RegExp(`^holdfast: UNAVAILABLE: cannot reach holdfast at ${nothingAddr}: connection refused: nothing listens on that port$`),
    ],
    [
      "holdfast's HTTP listener",
      () => ['--addr', httpAddr],
      () =>
        new RegExp(`^holdfast: UNAVAILABLE: cannot reach holdfast at ${httpAddr}: it does not speak gRPC: is that an HTTP port \\(holdfast's --http-listen`),
    ],
    [
      'TLS to a plaintext server',
      () => ['--addr', plain.addr, '--tls-ca', certs.file('ca.crt')],
      () => new RegExp(`cannot reach holdfast at ${plain.addr}: it speaks plaintext, and this client asked for TLS$`),
    ],
    [
      'plaintext to a TLS server',
      () => ['--addr', tls.addr],
      () => new RegExp(`cannot reach holdfast at ${tls.addr}: the server closed the connection at once: does it want TLS`),
    ],
    [
      'a server certificate from an unknown CA',
      () => ['--addr', tls.addr, '--tls'],
      () => new RegExp(`cannot reach holdfast at ${tls.addr}: its TLS certificate is not trusted: give the CA that signed it as tls\\.ca \\(--tls-ca\\)$`),
    ],
    [
      'a server certificate for another name',
      () => ['--addr', tls.addr, '--tls-ca', certs.file('ca.crt'), '--tls-server-name', 'elsewhere.example'],
      () => new RegExp(`cannot reach holdfast at ${tls.addr}: its TLS certificate is not for that host name`),
    ],
    [
      'mutual TLS without a client certificate',
      () => ['--addr', mutual.addr, '--tls-ca', certs.file('ca.crt')],
      () => new RegExp(`cannot reach holdfast at ${mutual.addr}: the server wants a client certificate it trusts`),
    ],
    [
      'mutual TLS with an untrusted client certificate',
      () => [
        '--addr',
        mutual.addr,
        '--tls-ca',
        certs.file('ca.crt'),
        '--tls-cert',
        certs.file('other-client.crt'),
        '--tls-key',
        certs.file('other-client.key'),
      ],
      () =>
        new RegExp(
          `cannot reach holdfast at ${mutual.addr}: the server (ended the TLS handshake: does it trust this client certificate\\?|wants a client certificate it trusts)`,
        ),
    ],
  ])('says what is wrong with %s in one line', async (_case, args, expected) => {
    const line = oneLine(await holdfast('inspect', uniqueName(), ...args()));
    expect(line).toMatch(typeof expected === 'function' ? expected() : expected);
    expect(line).not.toMatch(/Resolution note|Last error|\(\d{4}-\d\d-\d\dT/);
  });

  it('refuses an address from HOLDFAST_ADDR naming the variable', async () => {
    const run = await new Promise<Finished>((resolve) => {
      const child = execFile(process.execPath, [CLI, 'inspect', 'x'], { env: { ...process.env, HOLDFAST_ADDR: '127.0.0.1' } }, (_e, stdout, stderr) =>
        resolve({ code: child.exitCode, stdout, stderr }),
      );
    });
    expect(oneLine(run)).toMatch(/^error: option '--addr <host:port>' value '127\.0\.0\.1' from env 'HOLDFAST_ADDR' is invalid\. no port/);
  });

  it.each([
    ['--ttl-ms', '-5', 'must not be negative'],
    ['--ttl-ms', '', 'empty: give a whole number of milliseconds'],
    ['--wait-ms', ' ', 'empty: give a whole number of milliseconds'],
    ['--wait-ms', '1e3', 'must be a whole number of milliseconds \\(digits only\\)'],
    ['--wait-ms', '2.5', 'must be a whole number of milliseconds, not a fraction'],
    ['--wait-ms', '99999999999999999999', 'too large: at most 9007199254740991'],
    ['--limit', '-1', 'must not be negative'],
    ['--limit', '', 'empty: give a whole number'],
  ])('refuses %s %j naming the option and the cause', async (option, value, expected) => {
    const line = oneLine(await holdfast('acquire', uniqueName(), '--addr', plain.addr, option, value));
    expect(line).toMatch(new RegExp(`^error: option '${option} <[a-z]+>' argument '${value}' is invalid\\. ${expected}$`));
  });

  it('prints its version, the one the server logs as it starts listening', async () => {
    const { version } = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
    expect(await holdfast('--version')).toMatchObject({ code: 0, stdout: `${version}\n` });
    const listening = plain.logs
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; version?: string })
      .find((l) => l.msg === 'holdfast listening');
    expect(listening?.version).toBe(version);
  });
});

describe('the SDK', () => {
  it.each([
    ['127.0.0.1', /^holdfast address "127\.0\.0\.1": no port: give host:port, e\.g\. 127\.0\.0\.1:50051$/],
    ['http://127.0.0.1:50151', /^holdfast address "http:\/\/127\.0\.0\.1:50151": a URL: give host:port, e\.g\. 127\.0\.0\.1:50051, without "http:\/\/"$/],
    ['', /^holdfast address "": empty/],
  ])('refuses the address %j when the client is made', (address, expected) => {
    let thrown: unknown;
    try {
      new HoldfastClient(address).close();
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(InvalidAddressError);
    expect((thrown as Error).message).toMatch(expected);
  });

  async function failure(addr: string, security: ConnectionSecurity, call: 'inspect' | 'hold'): Promise<string> {
    const client = new HoldfastClient(addr, security);
    try {
      if (call === 'inspect') await client.inspect(uniqueName());
      else await (await client.hold(uniqueName(), { ttlMs: 5_000 })).release();
      return 'no error';
    } catch (err) {
      return (err as Error).message;
    } finally {
      client.close();
    }
  }

  it.each(['inspect', 'hold'] as const)('says why %s cannot connect, with the address, in one line', async (call) => {
    const ca = { tls: { ca: certs.pem('ca.crt') } };
    const cases: [string, ConnectionSecurity, string][] = [
      [plain.addr, {}, 'no error'], // the control: the same call succeeds where it can
      [nothingAddr, {}, `14 UNAVAILABLE: cannot reach holdfast at ${nothingAddr}: connection refused: nothing listens on that port`],
      [httpAddr, {}, `14 UNAVAILABLE: cannot reach holdfast at ${httpAddr}: it does not speak gRPC`],
      [plain.addr, ca, `14 UNAVAILABLE: cannot reach holdfast at ${plain.addr}: it speaks plaintext, and this client asked for TLS`],
      [tls.addr, {}, `14 UNAVAILABLE: cannot reach holdfast at ${tls.addr}: the server closed the connection at once: does it want TLS`],
      [mutual.addr, ca, `14 UNAVAILABLE: cannot reach holdfast at ${mutual.addr}: the server wants a client certificate it trusts`],
    ];
    for (const [addr, security, expected] of cases) {
      const message = await failure(addr, security, call);
      expect(message.startsWith(expected), `${addr}: ${message}`).toBe(true);
      expect(message).not.toContain('\n');
    }
  });
});
