// Grant tokens and waiter ids come from a pooled CSPRNG buffer (src/engine/random-ids.ts): each
// is as long as asked, and no bytes are handed out twice, across the pool's refills too.
import { describe, expect, it } from 'vitest';
import { randomId } from '../../src/engine/random-ids';

describe('randomId', () => {
  it('gives base64url ids of the length asked, all distinct across many refills of the pool', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const token = randomId(16);
      expect(token).toMatch(/^[A-Za-z0-9_-]{22}$/);
      seen.add(token);
      const waiter = randomId(9);
      expect(waiter).toMatch(/^[A-Za-z0-9_-]{12}$/);
      seen.add(waiter);
    }
    expect(seen.size).toBe(10_000);
  });

  it('uses each byte once: ids drawn in a row share no 8-byte run', () => {
    // A pool that handed out the same bytes again would repeat long runs between ids.
    const bytes = Array.from({ length: 1000 }, () => Buffer.from(randomId(16), 'base64url'));
    const runs = new Set<string>();
    for (const id of bytes) for (let at = 0; at + 8 <= id.length; at += 8) runs.add(id.subarray(at, at + 8).toString('hex'));
    expect(runs.size).toBe(2000);
  });
});
