// Keys and fences for the signed fence tests: the RFC 8032 test seeds of
// clients/conformance/signed-fence.json (never used outside tests), as Node key objects, and the
// JWK sets a guard loads.
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type FenceClaims, FenceKeyRing, type FenceJwk, signFence } from '../../clients/ts/fencing';

export const CONFORMANCE = join(__dirname, '..', '..', 'clients', 'conformance');
export const vectors = JSON.parse(readFileSync(join(CONFORMANCE, 'signed-fence.json'), 'utf8'));

const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** An Ed25519 private key from its 32-byte seed in hex (RFC 8032's form). */
export function keyFromSeed(seedHex: string): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, Buffer.from(seedHex, 'hex')]), format: 'der', type: 'pkcs8' });
}

const [first, second] = vectors.keys.ring.keys as FenceJwk[];
const outsider = vectors.keys.outsider as FenceJwk;
const seeds = vectors.keys.seeds as Record<string, string>;

/** The ring's two keys and the outsider, each with its JWK. */
export const KEYS = {
  /** The ring's first key: the server's signing key in these tests. */
  current: { jwk: first, privateKey: keyFromSeed(seeds[first.kid]) },
  /** The ring's second key: the one rotated to. */
  next: { jwk: second, privateKey: keyFromSeed(seeds[second.kid]) },
  /** In no ring. */
  outsider: { jwk: outsider, privateKey: keyFromSeed(seeds[outsider.kid]) },
};

export type TestKey = (typeof KEYS)[keyof typeof KEYS];

/** A JWK set of `keys`, as the server's /fence-keys serves it. */
export function jwks(...keys: TestKey[]): string {
  return JSON.stringify({ keys: keys.map((k) => k.jwk) });
}

/** The ring of the vectors (current and next). */
export function vectorRing(): FenceKeyRing {
  return FenceKeyRing.fromJwks(vectors.keys.ring);
}

/** A fence for `claims`, signed by `key` (the current key by default), its lease ending in a minute unless told. */
export function signed(claims: Partial<FenceClaims> & { lock: string; token: bigint }, key: TestKey = KEYS.current): string {
  return signFence(key.privateKey, { leaseEndMs: Date.now() + 60_000, ...claims });
}
