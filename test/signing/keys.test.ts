// Fence keys as an operator handles them: `holdfast fence-key new/public`, a key from openssl,
// the server refusing unusable key files at start (naming the flag, the file and the cause), two
// servers sharing one key, a rotation (a new signing key, the old one still published), and a
// server without a key (every fence field empty, nothing published).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/redis/embedded';
import { connect, type TestClient } from '../support/client';
import { CLI } from '../support/paths';
import { startTestRedis, uniqueName, type TestRedis } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { fetchFenceKeys, getFenceKeys, newFenceKey, verifyFence, type JwkSet } from './fences';

let dir: string;
let redis: TestRedis;
const servers: ServerProcess[] = [];
const clients: TestClient[] = [];

const file = (name: string) => join(dir, name);

function cli(...args: string[]) {
  const run = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** A server that must refuse to start: its exit code and its one line on stderr (no Redis is reached). Several run at once. */
function refusedStart(...flags: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'serve', '--listen', '127.0.0.1:0', '--redis', redis.url, ...flags], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

async function serverWith(flags: string[], env: NodeJS.ProcessEnv = {}): Promise<{ server: ServerProcess; client: TestClient; httpPort: number }> {
  const httpPort = await freePort();
  const server = await startServerProcess(redis.url, [...flags, '--http-listen', `127.0.0.1:${httpPort}`], env);
  servers.push(server);
  const client = connect(server.addr);
  clients.push(client);
  return { server, client, httpPort };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'holdfast-fence-keys-'));
  redis = await startTestRedis();
});

afterAll(async () => {
  clients.forEach((c) => c.close());
  await Promise.all(servers.map((s) => s.stop()));
  await redis?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('holdfast fence-key', () => {
  it('new writes a private key only its owner may read and prints its public JWK set; public prints the same set', () => {
    const printed = newFenceKey(file('one.pem'));
    expect(statSync(file('one.pem')).mode & 0o777).toBe(0o600);
    expect(readFileSync(file('one.pem'), 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(printed.keys).toHaveLength(1);
    const [key] = printed.keys;
    expect(key).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
    expect(key.kid).toBe(createHash('sha256').update(Buffer.from(key.x, 'base64url')).digest('base64url').slice(0, 16));
    const again = cli('fence-key', 'public', file('one.pem'));
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual(printed);
    expect(again.stdout + again.stderr).not.toContain('PRIVATE');
  });

  it('new refuses to overwrite a file, and leaves it as it was', () => {
    writeFileSync(file('taken.pem'), 'keep me');
    const run = cli('fence-key', 'new', '--out', file('taken.pem'));
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `holdfast: fence-key new --out ${file('taken.pem')}: the file exists; refusing to overwrite a key (remove it first, or choose another file)\n`,
    );
    expect(readFileSync(file('taken.pem'), 'utf8')).toBe('keep me');
  });

  it('a key openssl made (genpkey -algorithm ed25519) is accepted', () => {
    execFileSync('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', file('openssl.pem')]);
    const run = cli('fence-key', 'public', file('openssl.pem'));
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519' });
  });
});

describe('the server refuses unusable fence keys at start, naming the flag, the file and the cause', () => {
  it('a missing file', async () => {
    expect(await refusedStart('--fence-signing-key', file('missing.pem'))).toMatchObject({
      code: 2,
      stderr: `holdfast: --fence-signing-key ${file('missing.pem')}: no such file\n`,
    });
  });

  it('a key file others may read: refused like ssh refuses one, with the fix', async () => {
    newFenceKey(file('open.pem'));
    chmodSync(file('open.pem'), 0o644);
    expect(await refusedStart('--fence-signing-key', file('open.pem'))).toMatchObject({
      code: 2,
      stderr: `holdfast: --fence-signing-key ${file('open.pem')}: the private key file may be read by others (mode 644); run \`chmod 600 ${file('open.pem')}\`\n`,
    });
  });

  it('a key that is not Ed25519, and a file that is no PEM key', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(file('rsa.pem'), privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
    expect(await refusedStart('--fence-signing-key', file('rsa.pem'))).toMatchObject({
      code: 2,
      stderr: `holdfast: --fence-signing-key ${file('rsa.pem')}: the key is rsa, not Ed25519\n`,
    });
    writeFileSync(file('junk.pem'), 'not a key\n', { mode: 0o600 });
    expect(await refusedStart('--fence-signing-key', file('junk.pem'))).toMatchObject({
      code: 2,
      stderr: `holdfast: --fence-signing-key ${file('junk.pem')}: not a PEM private key (expected one like \`holdfast fence-key new\` or \`openssl genpkey -algorithm ed25519\` writes)\n`,
    });
  });

  it('a verify-keys file that is not JSON, not a JWK set, holds a key whose kid is not its id, or a private key', async () => {
    const good = newFenceKey(file('verify-base.pem'));
    const cases: [string, string, string][] = [
      ['not-json.json', '{oops', 'not JSON'],
      ['no-keys.json', '{"key":[]}', 'not a JWK set (no "keys" array)'],
      [
        'wrong-kid.json',
        JSON.stringify({ keys: [{ ...good.keys[0], kid: 'AAAAAAAAAAAAAAAA' }] }),
        `key 1 ("AAAAAAAAAAAAAAAA"): "kid" is "AAAAAAAAAAAAAAAA", but the key's id is "${good.keys[0].kid}"`,
      ],
      [
        'rsa.json',
        JSON.stringify({ keys: [{ kty: 'RSA', kid: 'r', n: 'x', e: 'AQAB' }] }),
        'key 1 ("r") is not an Ed25519 public key (kty "OKP", crv "Ed25519")',
      ],
      [
        'private.json',
        JSON.stringify({ keys: [{ ...good.keys[0], d: 'secret' }] }),
        `key 1 ("${good.keys[0].kid}") holds a private key ("d"): publish public keys only`,
      ],
    ];
    for (const [name, text] of cases) writeFileSync(file(name), text);
    const runs = await Promise.all(cases.map(([name]) => refusedStart('--fence-signing-key', file('verify-base.pem'), '--fence-verify-keys', file(name))));
    expect(runs).toEqual(cases.map(([name, , why]) => ({ code: 2, stderr: `holdfast: --fence-verify-keys ${file(name)}: ${why}\n` })));
  });
});

describe('servers sharing a key, a rotation, and a server without a key', () => {
  let oldRing: JwkSet;
  let newRing: JwkSet;
  beforeAll(() => {
    oldRing = newFenceKey(file('old.pem'));
    newRing = newFenceKey(file('new.pem'));
    writeFileSync(file('old.jwks.json'), JSON.stringify(oldRing));
  });

  it('two servers given one key file (one by flag, one by environment variable) sign with the same key id; one key verifies both', async () => {
    const a = await serverWith(['--fence-signing-key', file('old.pem')]);
    const b = await serverWith([], { HOLDFAST_FENCE_SIGNING_KEY: file('old.pem') });
    const name = uniqueName('shared');
    const first = await a.client.acquire({ name, ttlMs: '2000' });
    await a.client.release({ name, token: first.token });
    const second = await b.client.acquire({ name, ttlMs: '2000' });
    const fences = [verifyFence(first.signedFence, oldRing), verifyFence(second.signedFence, oldRing)];
    expect(fences.map((f) => f.keyId)).toEqual([oldRing.keys[0].kid, oldRing.keys[0].kid]);
    expect(BigInt(fences[1].token)).toBeGreaterThan(BigInt(fences[0].token));
    expect((await fetchFenceKeys(b.httpPort)).set).toEqual(oldRing);
  });

  it('rotation: a server signing with the new key (from its config file) publishes the old one too, the signing key first', async () => {
    writeFileSync(file('rotated.yaml'), `fence-signing-key: ${file('new.pem')}\nfence-verify-keys: ${file('old.jwks.json')}\n`);
    const rotated = await serverWith(['--config', file('rotated.yaml')]);
    const both = { keys: [...newRing.keys, ...oldRing.keys] };
    expect((await fetchFenceKeys(rotated.httpPort)).set).toEqual(both);
    const answer = await getFenceKeys(rotated.server.addr);
    expect(answer.signingKeyId).toBe(newRing.keys[0].kid);
    expect(answer.keys.map((k) => k.keyId)).toEqual([newRing.keys[0].kid, oldRing.keys[0].kid]);
    const grant = await rotated.client.acquire({ name: uniqueName('rotated'), ttlMs: '2000' });
    expect(verifyFence(grant.signedFence, both).keyId).toBe(newRing.keys[0].kid);
    expect(() => verifyFence(grant.signedFence, oldRing)).toThrow(/not in the ring/); // the old ring alone does not know it
  });

  it('without a key: every fence field is empty and nothing is published', async () => {
    const plain = await serverWith([]);
    const name = uniqueName('unsigned');
    const grant = await plain.client.acquire({ name, ttlMs: '5000' });
    expect(grant.acquired).toBe(true);
    expect(grant.signedFence).toBe('');
    expect((await plain.client.renew({ name, token: grant.token, ttlMs: '5000' })).signedFence).toBe('');
    const hold = plain.client.hold({ name: `${name}-h`, ttlMs: '900' });
    expect((await hold.next((e) => !!e.acquired)).acquired!.signedFence).toBe('');
    expect((await hold.next((e) => !!e.renewed)).renewed!.signedFences).toEqual([]);
    hold.call.cancel();
    expect(await getFenceKeys(plain.server.addr)).toEqual({ signingKeyId: '', keys: [] });
    expect((await fetchFenceKeys(plain.httpPort)).set).toEqual({ keys: [] });
  });
});
