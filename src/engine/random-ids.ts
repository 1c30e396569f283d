// Random identifiers (grant tokens, waiter and hold ids) from a pooled buffer: one call into
// the OS's CSPRNG fills 4 KiB, enough for 256 tokens, where a randomBytes() per id cost 4% of
// the server's busy CPU in the W1 profile. Every byte is used once, so an id is as random as one
// from randomBytes().
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let used = POOL_BYTES;

/** `bytes` fresh random bytes, base64url: 16 bytes (128 bits) for a secret token. */
export function randomId(bytes: number): string {
  if (used + bytes > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const id = pool.toString('base64url', used, used + bytes);
  used += bytes;
  return id;
}
