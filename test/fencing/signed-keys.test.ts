// Loading a guard's key ring: from a JWK set string, a file, or fetched once from a URL, each key
// checked as it is loaded; failures name the source (file, URL) and the cause in words.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchFenceKeys, parseFenceKeys, readFenceKeys } from '../../clients/ts/fencing';
import { freePort } from '../../src/redis/embedded';
import { jwks, KEYS, signed } from './signing';

let server: Server;
let base: string;
let dir: string;
const set = jwks(KEYS.current, KEYS.next);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'holdfast-fence-keys-'));
  server = createServer((req, res) => {
    if (req.url === '/fence-keys') res.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(set);
    else if (req.url === '/not-json') res.writeHead(200).end('<html>');
    else if (req.url === '/silent')
      return; // never answers
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe('a key ring', () => {
  it('is the same from a string, a file and a URL, and verifies fences of its keys only', async () => {
    const file = join(dir, 'keys.json');
    writeFileSync(file, set);
    const rings = [parseFenceKeys(set), readFenceKeys(file), await fetchFenceKeys(`${base}/fence-keys`)];
    for (const ring of rings) {
      expect(ring.keyIds).toEqual([KEYS.current.jwk.kid, KEYS.next.jwk.kid]);
      expect(ring.verify(signed({ lock: 'a', token: 1n })).lock).toBe('a');
      expect(ring.verify(signed({ lock: 'a', token: 1n }, KEYS.next)).token).toBe(1n);
      expect(() => ring.verify(signed({ lock: 'a', token: 1n }, KEYS.outsider))).toThrow(`fence signed by unknown key "${KEYS.outsider.jwk.kid}"`);
    }
  });

  it('refuses to load, naming the file or URL and the cause', async () => {
    expect(() => readFenceKeys(join(dir, 'missing.json'))).toThrow(`cannot read the fence key file ${join(dir, 'missing.json')}: no such file`);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ keys: [{ ...KEYS.current.jwk, kid: KEYS.next.jwk.kid }] }));
    expect(() => readFenceKeys(bad)).toThrow(`the fence key file ${bad}, key 1 of 1 ("${KEYS.next.jwk.kid}") has kid`);
    await expect(fetchFenceKeys(`${base}/nothing`)).rejects.toThrow(`cannot fetch the fence keys from ${base}/nothing: it answered HTTP 404`);
    await expect(fetchFenceKeys(`${base}/not-json`)).rejects.toThrow(`the fence key set from ${base}/not-json is not JSON`);
    await expect(fetchFenceKeys(`${base}/silent`, { timeoutMs: 300 })).rejects.toThrow(
      `cannot fetch the fence keys from ${base}/silent: no answer within 300 ms`,
    );
    const closed = `http://127.0.0.1:${await freePort()}/fence-keys`;
    await expect(fetchFenceKeys(closed)).rejects.toThrow(`cannot fetch the fence keys from ${closed}: connection refused`);
  });

  it('is fixed once built: rotation builds a new one (the old ring keeps its keys)', () => {
    const old = parseFenceKeys(jwks(KEYS.current));
    const rotated = parseFenceKeys(jwks(KEYS.next));
    const fence = signed({ lock: 'a', token: 1n });
    expect(old.verify(fence).keyId).toBe(KEYS.current.jwk.kid);
    expect(() => rotated.verify(fence)).toThrow('unknown key');
    expect(old.keyIds).toEqual([KEYS.current.jwk.kid]);
  });
});
