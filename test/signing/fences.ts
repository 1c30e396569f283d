// What the signing tests check fences with: a verifier written from clients/conformance/signed-fence.md
// with Node's crypto alone (not the server's code), the server's published keys over HTTP and
// AdminService, and key files made as an operator would (holdfast fence-key new).
import { execFileSync } from 'node:child_process';
import { createPublicKey, verify } from 'node:crypto';
import { credentials, Metadata } from '@grpc/grpc-js';
import { AdminServiceClient, type GetFenceKeysResponse } from '../../gen/holdfast/v1/admin';
import { CLI } from '../support/paths';

export interface JwkSet {
  keys: { kty: string; crv: string; kid: string; x: string; alg: string; use: string }[];
}

export interface VerifiedFence {
  keyId: string;
  namespace: string;
  lock: string;
  token: string;
  /** undefined: the fence states no lease end. */
  leaseEndMs?: number;
}

/** Verifies `fence` with the key of its key id in `ring`; throws when it does not verify. */
export function verifyFence(fence: string, ring: JwkSet): VerifiedFence {
  const fields = fence.split(':');
  if (fields.length !== 7 || fields[0] !== 'v1') throw new Error(`not a v1 fence of seven fields: ${fields.length} fields`);
  const [, keyId, namespace, lock, token, leaseEnd, signature] = fields;
  const jwk = ring.keys.find((k) => k.kid === keyId);
  if (!jwk) throw new Error(`key id ${keyId} is not in the ring`);
  const body = fence.slice(0, fence.lastIndexOf(':'));
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
  if (!verify(null, Buffer.from(body), key, Buffer.from(signature, 'base64url'))) throw new Error('the signature does not verify');
  return {
    keyId,
    namespace: decodeURIComponent(namespace),
    lock: decodeURIComponent(lock),
    token,
    leaseEndMs: leaseEnd === '' ? undefined : Number(leaseEnd),
  };
}

export async function fetchFenceKeys(httpPort: number): Promise<{ set: JwkSet; contentType: string | null; cacheControl: string | null }> {
  const res = await fetch(`http://127.0.0.1:${httpPort}/fence-keys`);
  if (res.status !== 200) throw new Error(`GET /fence-keys: ${res.status}`);
  return { set: (await res.json()) as JwkSet, contentType: res.headers.get('content-type'), cacheControl: res.headers.get('cache-control') };
}

export function getFenceKeys(addr: string, metadata = new Metadata()): Promise<GetFenceKeysResponse> {
  const client = new AdminServiceClient(addr, credentials.createInsecure());
  return new Promise((resolve, reject) =>
    client.getFenceKeys({}, metadata, (err, res) => {
      client.close();
      return err ? reject(err) : resolve(res);
    }),
  );
}

/** `holdfast fence-key new --out file`: the JWK set it printed. */
export function newFenceKey(file: string): JwkSet {
  return JSON.parse(execFileSync(process.execPath, [CLI, 'fence-key', 'new', '--out', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** The fences (or their signatures alone) that appear in `lines`. */
export function fencesIn(lines: string[], fences: string[]): string[] {
  const text = lines.join('\n');
  return fences.filter((f) => text.includes(f) || text.includes(f.slice(f.lastIndexOf(':') + 1)));
}

/** Redis's clock in Unix ms (TIME). */
export async function redisNowMs(client: { time(): Promise<unknown> }): Promise<number> {
  const [seconds, micros] = (await client.time()) as [string, string];
  return Number(seconds) * 1000 + Number(micros) / 1000;
}
