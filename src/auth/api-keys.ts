// API keys are stored only as their SHA-256. A fast hash is enough because the keys are random
// (256 bits from `holdfast hash-key --generate`), so there is nothing to guess word by word: the
// choice GitHub and Stripe make for their tokens. A slow hash (scrypt) would cost every call.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** What `holdfast hash-key` prints and the config file keeps: 64 hex digits. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** A new random API key: 32 bytes, base64url, with a prefix that says what it is (as secret scanners expect). */
export function newApiKey(): string {
  return `hf_${randomBytes(32).toString('base64url')}`;
}

/**
 * The index of the hash equal to `presented` (a key's SHA-256), or -1. Every entry is compared,
 * each in constant time, so the time taken says nothing of how near a guess came.
 */
export function matchApiKey(presented: Buffer, hashes: readonly Buffer[]): number {
  let found = -1;
  hashes.forEach((hash, i) => {
    if (timingSafeEqual(hash, presented) && found < 0) found = i;
  });
  return found;
}
