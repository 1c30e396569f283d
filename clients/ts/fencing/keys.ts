// A guard's fence key ring: the public keys whose signed fences it accepts, read from a JWK set
// (RFC 7517/8037) given as a string, a file, or fetched once from a holdfast server's /fence-keys.
// Every key is checked as it is loaded; the ring never changes after (rotation = a new ring).
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fenceKeyId, parseSignedFence, type SignedFence } from './signed';
import { FenceRefusal } from './refusal';
import { FENCE_HEADERS } from './wire';

/** One key of a JWK set as the server publishes it. */
export interface FenceJwk {
  kty: string;
  crv: string;
  kid: string;
  x: string;
  alg?: string;
  use?: string;
}

export class FenceKeyRing {
  private constructor(private readonly keys: ReadonlyMap<string, KeyObject>) {}

  /**
   * The ring of a JWK set (`{"keys":[...]}`, as JSON text or parsed). `source` names where it came
   * from in errors. Throws, naming the key and what is wrong, for a key that is not OKP/Ed25519 with a
   * 32-byte `x` and a `kid` that is the id computed from `x`; and for a set without keys.
   */
  static fromJwks(jwks: string | { keys?: unknown }, source = 'the fence key set'): FenceKeyRing {
    let set: unknown = jwks;
    if (typeof jwks === 'string') {
      try {
        set = JSON.parse(jwks);
      } catch {
        throw new Error(`${source} is not JSON (a JWK set: {"keys":[{"kty":"OKP","crv":"Ed25519","kid":...,"x":...}]})`);
      }
    }
    const list = (set as { keys?: unknown })?.keys;
    if (!Array.isArray(list)) throw new Error(`${source} is not a JWK set: it has no "keys" array`);
    if (list.length === 0) throw new Error(`${source} has no keys: a guard with an empty ring would refuse every signed fence`);
    const keys = new Map<string, KeyObject>();
    list.forEach((jwk, i) => {
      const key = checkedKey(jwk as Partial<FenceJwk>, `${source}, key ${i + 1} of ${list.length}`);
      keys.set(key.kid, key.publicKey);
    });
    return new FenceKeyRing(keys);
  }

  /** The ids of the ring's keys, in the set's order. */
  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  has(keyId: string): boolean {
    return this.keys.has(keyId);
  }

  /**
   * Steps 3 and 4 of the guard: throws a FenceRefusal (`unknown_fence_key`, `bad_fence_signature`)
   * unless the fence's key is in the ring and its signature verifies with it.
   */
  check(fence: SignedFence): void {
    const key = this.keys.get(fence.keyId);
    if (!key) throw FenceRefusal.unknownKey(fence.keyId);
    if (!verify(null, Buffer.from(fence.signedText, 'latin1'), key, fence.signature)) throw FenceRefusal.badSignature(fence.keyId);
  }

  /** Reads `text` (parseSignedFence) and checks its key and signature (check); throws FenceError or FenceRefusal. */
  verify(text: string, header: string = FENCE_HEADERS.fence): SignedFence {
    const fence = parseSignedFence(text, header);
    this.check(fence);
    return fence;
  }
}

function checkedKey(jwk: Partial<FenceJwk>, where: string): { kid: string; publicKey: KeyObject } {
  const kid = typeof jwk?.kid === 'string' ? jwk.kid : undefined;
  const named = kid === undefined ? where : `${where} ("${kid}")`;
  if (jwk?.kty !== 'OKP' || jwk.crv !== 'Ed25519') {
    throw new Error(`${named} is not an Ed25519 key: kty "${jwk?.kty}", crv "${jwk?.crv}" (fence keys are kty "OKP", crv "Ed25519")`);
  }
  const raw = typeof jwk.x === 'string' && /^[A-Za-z0-9_-]+$/.test(jwk.x) ? Buffer.from(jwk.x, 'base64url') : Buffer.alloc(0);
  if (raw.length !== 32) throw new Error(`${named} has an "x" that is not a 32-byte public key in base64url`);
  const id = fenceKeyId(raw);
  if (kid !== id) throw new Error(`${named} has kid "${kid}", but the id of its public key is "${id}" (a key's id is computed from x, never chosen)`);
  return { kid, publicKey: createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x! }, format: 'jwk' }) };
}

/** The ring of a JWK set given as a string (or parsed JSON), e.g. from a configuration value. */
export function parseFenceKeys(jwks: string | { keys?: unknown }): FenceKeyRing {
  return FenceKeyRing.fromJwks(jwks);
}

/** The ring of a JWK set file (e.g. saved from the server's /fence-keys). */
export function readFenceKeys(path: string): FenceKeyRing {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the fence key file ${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  return FenceKeyRing.fromJwks(text, `the fence key file ${path}`);
}

export interface FetchFenceKeysOptions {
  /** How long to wait for the answer, in ms (default 10 000). */
  timeoutMs?: number;
}

/**
 * Fetches a JWK set once from `url` (a holdfast server's `http://host:port/fence-keys`, on its
 * HTTP listener) and builds the ring. Rejects naming the URL and the cause.
 */
export async function fetchFenceKeys(url: string, options: FetchFenceKeysOptions = {}): Promise<FenceKeyRing> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  let text: string;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
    text = await res.text();
    if (!res.ok) throw new Error(`it answered HTTP ${res.status}`);
  } catch (err) {
    throw new Error(`cannot fetch the fence keys from ${url}: ${fetchFailure(err, timeoutMs)}`);
  }
  return FenceKeyRing.fromJwks(text, `the fence key set from ${url}`);
}

/** A fetch failure in words (undici's own message is "fetch failed", its cause a system error). */
function fetchFailure(err: unknown, timeoutMs: number): string {
  const e = err as Error & { cause?: { code?: string } };
  if (e.name === 'TimeoutError') return `no answer within ${timeoutMs} ms`;
  switch (e.cause?.code) {
    case 'ECONNREFUSED':
      return "connection refused: nothing listens on that port (the server's HTTP listener, --http-listen)";
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'the host name does not resolve';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'the connection was closed before an answer';
  }
  if (e.message.startsWith('it answered')) return e.message;
  if (err instanceof TypeError && /URL|url/.test(e.message)) return 'not a valid URL';
  return 'the request failed';
}
