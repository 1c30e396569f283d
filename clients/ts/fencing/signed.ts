// The signed fence (clients/conformance/signed-fence.md): one string a holdfast server signs with
// Ed25519 for every grant, so a resource can tell a fence holdfast issued for its lock from a forged
// or misdirected one without asking anybody:
//   v1:<key_id>:<namespace>:<lock>:<token>:<lease_end_ms>:<signature>
// Parsing checks every rule of the format; verifying needs a key ring (keys.ts).
import { createHash, createPublicKey, sign, type KeyObject } from 'node:crypto';
import { decodeName, decodeUint64, encodeFence, FENCE_HEADERS, FenceError, MAX_FENCING_TOKEN } from './wire';

/** A signed fence, read (every field checked, not yet verified). */
export interface SignedFence {
  /** The id of the key that signed it (fenceKeyId of that key). */
  keyId: string;
  namespace: string;
  lock: string;
  token: bigint;
  /** When the grant's lease ends, in Unix ms by the server's clock; null when the fence states none (a lock kept by a Session). */
  leaseEndMs: bigint | null;
  /** What the signature covers: the text before the last `:`, as sent. */
  signedText: string;
  signature: Buffer;
}

export const MAX_SIGNED_FENCE_LENGTH = 4096;
const PRINTABLE = /^[\x20-\x7e]*$/;
const KEY_ID = /^[A-Za-z0-9_-]{1,64}$/;
const SIGNATURE = /^[A-Za-z0-9_-]{86}$/;

/**
 * Reads a signed fence, checking every rule of its format (signed-fence.md); throws FenceError
 * ('malformed', field 'fence') naming `header` and what is wrong. It does not verify the signature.
 */
export function parseSignedFence(text: string, header: string = FENCE_HEADERS.fence): SignedFence {
  const bad = (why: string) => new FenceError('malformed', 'fence', header, why);
  if (text.length > MAX_SIGNED_FENCE_LENGTH) throw bad(`must be at most ${MAX_SIGNED_FENCE_LENGTH} characters`);
  if (!PRINTABLE.test(text)) throw bad('must be printable ASCII');
  const fields = text.split(':');
  if (fields.length !== 7) throw bad('must have seven fields separated by ":" (v1:key_id:namespace:lock:token:lease_end_ms:signature)');
  const [version, keyId, namespace, lock, token, leaseEnd, signature] = fields;
  if (version !== 'v1') throw bad('must start with the format version v1');
  if (!KEY_ID.test(keyId)) throw bad('(its key id field) must be 1 to 64 characters of A-Z a-z 0-9 _ -');
  if (!SIGNATURE.test(signature) || Buffer.from(signature, 'base64url').toString('base64url') !== signature) {
    throw bad('(its signature field) must be 64 bytes in canonical base64url without padding (86 characters)');
  }
  const fence: SignedFence = {
    keyId,
    namespace: decodeName(namespace, 'fence', header, 'namespace field'),
    lock: decodeName(lock, 'fence', header, 'lock field'),
    token: decodeUint64(token, 'fence', header, 'token field'),
    leaseEndMs: leaseEnd === '' ? null : decodeUint64(leaseEnd, 'fence', header, 'lease end field'),
    signedText: text.slice(0, text.lastIndexOf(':')),
    signature: Buffer.from(signature, 'base64url'),
  };
  if (fence.token === 0n) throw bad('(its token field) must be at least 1');
  return fence;
}

/** A key's id: the first 16 characters of the base64url SHA-256 of its raw 32-byte public key. */
export function fenceKeyId(rawPublicKey: Uint8Array): string {
  return createHash('sha256').update(rawPublicKey).digest('base64url').slice(0, 16);
}

/** The raw 32-byte public key of an Ed25519 key (private or public). */
export function rawPublicKey(key: KeyObject): Buffer {
  const jwk = createPublicKey(key).export({ format: 'jwk' });
  if (jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') throw new RangeError('not an Ed25519 key');
  return Buffer.from(jwk.x, 'base64url');
}

/** What a fence states: the holdfast server signs these for every grant. */
export interface FenceClaims {
  /** Default `default`. */
  namespace?: string;
  lock: string;
  token: bigint;
  /** The lease's end in Unix ms; omitted or null for none (a lock kept by a Session). */
  leaseEndMs?: bigint | number | null;
}

/**
 * Signs a fence as the holdfast server does, with an Ed25519 private key. For tests of a guarded
 * resource (the server signs real grants' fences with its --fence-signing-key).
 */
export function signFence(privateKey: KeyObject, claims: FenceClaims): string {
  if (claims.token < 1n || claims.token > MAX_FENCING_TOKEN) throw new RangeError(`fencing token ${claims.token} is outside 1..${MAX_FENCING_TOKEN}`);
  const end = claims.leaseEndMs ?? null;
  const body = [
    'v1',
    fenceKeyId(rawPublicKey(privateKey)),
    encodeURIComponent(claims.namespace ?? 'default'),
    encodeFence(claims.lock, claims.token).lock,
    claims.token.toString(),
    end === null ? '' : BigInt(end).toString(),
  ].join(':');
  return `${body}:${sign(null, Buffer.from(body), privateKey).toString('base64url')}`;
}
