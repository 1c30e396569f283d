// Fence keys: the signing key (a PEM PKCS#8 Ed25519 private key, as `openssl genpkey -algorithm
// ed25519` or `holdfast fence-key new` writes it), the further public keys published for rotation
// (a JWK set), their ids, and the JWK set the server publishes. Errors name the flag, the file and
// the cause in words.
import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';

export interface PublicFenceKey {
  keyId: string;
  /** The raw 32-byte Ed25519 public key. */
  publicKey: Buffer;
}

export interface SigningKey extends PublicFenceKey {
  privateKey: KeyObject;
}

export interface Jwk {
  kty: 'OKP';
  crv: 'Ed25519';
  kid: string;
  x: string;
  alg: 'EdDSA';
  use: 'sig';
}

export const SIGNING_KEY_FLAG = '--fence-signing-key';
export const VERIFY_KEYS_FLAG = '--fence-verify-keys';

/** The first 16 characters of base64url(SHA-256(raw public key)): every server sharing a key writes the same id. */
export function keyIdOf(rawPublicKey: Buffer): string {
  return createHash('sha256').update(rawPublicKey).digest('base64url').slice(0, 16);
}

export function jwkOf(key: PublicFenceKey): Jwk {
  return { kty: 'OKP', crv: 'Ed25519', kid: key.keyId, x: key.publicKey.toString('base64url'), alg: 'EdDSA', use: 'sig' };
}

/** The public half of an Ed25519 private key. */
export function signingKeyOf(privateKey: KeyObject): SigningKey {
  const publicKey = Buffer.from(createPublicKey(privateKey).export({ format: 'jwk' }).x as string, 'base64url');
  return { privateKey, publicKey, keyId: keyIdOf(publicKey) };
}

export class FenceKeyError extends Error {}

/** Group or world may read it: refused, as ssh refuses such a private key. */
function checkPrivate(flag: string, file: string): void {
  if (process.platform === 'win32') return;
  const mode = statSync(file).mode & 0o777;
  if (mode & 0o077) {
    const octal = mode.toString(8).padStart(3, '0');
    throw new FenceKeyError(`${flag} ${file}: the private key file may be read by others (mode ${octal}); run \`chmod 600 ${file}\``);
  }
}

function readKeyFile(flag: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : 'it cannot be read';
    throw new FenceKeyError(`${flag} ${file}: ${why}`);
  }
}

/** Reads a signing key file: a PEM PKCS#8 Ed25519 private key that (checkMode) only its owner may read. */
export function loadSigningKey(file: string, flag = SIGNING_KEY_FLAG, { checkMode = true } = {}): SigningKey {
  const pem = readKeyFile(flag, file);
  if (checkMode) checkPrivate(flag, file);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    throw new FenceKeyError(
      `${flag} ${file}: not a PEM private key (expected one like \`holdfast fence-key new\` or \`openssl genpkey -algorithm ed25519\` writes)`,
    );
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new FenceKeyError(`${flag} ${file}: the key is ${privateKey.asymmetricKeyType ?? 'of an unknown type'}, not Ed25519`);
  }
  return signingKeyOf(privateKey);
}

/** One key of a JWK set, checked as a guard checks it: OKP, Ed25519, 32 bytes, kid = the id computed from x. */
function publicKeyOf(jwk: unknown, where: string): PublicFenceKey {
  if (typeof jwk !== 'object' || jwk === null) throw new FenceKeyError(`${where} is not a JSON object`);
  const { kty, crv, kid, x } = jwk as Record<string, unknown>;
  if (kty !== 'OKP' || crv !== 'Ed25519') throw new FenceKeyError(`${where} is not an Ed25519 public key (kty "OKP", crv "Ed25519")`);
  if (typeof x !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(x)) throw new FenceKeyError(`${where}: "x" is not 32 bytes in base64url`);
  if ('d' in (jwk as object)) throw new FenceKeyError(`${where} holds a private key ("d"): publish public keys only`);
  const publicKey = Buffer.from(x, 'base64url');
  const keyId = keyIdOf(publicKey);
  if (kid !== keyId) throw new FenceKeyError(`${where}: "kid" is ${JSON.stringify(kid)}, but the key's id is "${keyId}"`);
  return { keyId, publicKey };
}

/** Parses a JWK set's text; `source` names it in errors. */
export function parseJwkSet(text: string, source: string): PublicFenceKey[] {
  let set: unknown;
  try {
    set = JSON.parse(text);
  } catch {
    throw new FenceKeyError(`${source}: not JSON`);
  }
  const keys = (set as { keys?: unknown })?.keys;
  if (!Array.isArray(keys)) throw new FenceKeyError(`${source}: not a JWK set (no "keys" array)`);
  return keys.map((jwk, i) => publicKeyOf(jwk, `${source}: key ${i + 1}${typeof (jwk as Jwk)?.kid === 'string' ? ` ("${(jwk as Jwk).kid}")` : ''}`));
}

/** Reads the further public keys to publish (a JWK set file). */
export function loadVerifyKeys(file: string, flag = VERIFY_KEYS_FLAG): PublicFenceKey[] {
  return parseJwkSet(readKeyFile(flag, file), `${flag} ${file}`);
}
