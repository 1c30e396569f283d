// clients/conformance/signed-fence.json, every vector, run against the kit, and against wrong
// kits (negative controls): each must fail the file, at the vectors that catch its mistake.
import { describe, expect, it } from 'vitest';
import {
  admitFence,
  type AdmittedFence,
  FENCE_HEADERS,
  FENCE_METADATA,
  FenceError,
  FenceKeyRing,
  fenceKeyId,
  FenceRefusal,
  type FenceRules,
  type FenceValues,
  parseSignedFence,
  type SignedFence,
  signFence,
} from '../../clients/ts/fencing';
import { keyFromSeed, vectors } from './signing';

/** What the vectors exercise: a wrong kit replaces one of these. */
interface Kit {
  loadKeys(jwks: { keys: unknown[] }): FenceKeyRing;
  verify(text: string, ring: FenceKeyRing): SignedFence;
  admit(values: FenceValues, rules: FenceRules, resourceLock: string, nowMs?: number): AdmittedFence;
  sign(seedHex: string, claims: { namespace: string; lock: string; token: bigint; leaseEndMs: bigint | null }): string;
}

const realKit: Kit = {
  loadKeys: (jwks) => FenceKeyRing.fromJwks(jwks),
  verify: (text, ring) => ring.verify(text),
  admit: (values, rules, lock, nowMs) => admitFence(values, FENCE_HEADERS, rules, lock, nowMs),
  sign: (seed, claims) => signFence(keyFromSeed(seed), claims),
};

/** The vector's name for an error the kit threw. */
function errorName(err: unknown): string {
  if (err instanceof FenceError) return err.kind;
  if (!(err instanceof FenceRefusal)) return 'other';
  const names: Record<string, string> = {
    malformed_fence: 'malformed',
    missing_fence: 'missing',
    signed_fence_required: 'signed_required',
    unknown_fence_key: 'unknown_key',
    bad_fence_signature: 'bad_signature',
    fence_for_another_lock: 'wrong_lock',
    fence_for_another_namespace: 'wrong_namespace',
    fence_lease_ended: 'lease_ended',
  };
  return names[err.error] ?? err.error;
}

function outcome<T>(run: () => T): { ok: T } | { error: string } {
  try {
    return { ok: run() };
  } catch (err) {
    return { error: errorName(err) };
  }
}

const only = (fence: string): FenceValues => ({ fence: [fence], lock: [], token: [] });

/** Runs every vector against `kit`; returns the names of the vectors it fails. */
function runVectors(kit: Kit): string[] {
  const failed: string[] = [];
  const check = (name: string, pass: boolean) => void (pass || failed.push(name));
  const ring = kit.loadKeys(vectors.keys.ring);
  check('ring loads with both keys', ring.keyIds.length === 2);
  for (const v of vectors.badKeys) check(`badKeys: ${v.name}`, 'error' in outcome(() => kit.loadKeys({ keys: [v.jwk] })));
  for (const v of vectors.sign) {
    const claims = { namespace: v.namespace, lock: v.lock, token: BigInt(v.token), leaseEndMs: v.leaseEndMs === null ? null : BigInt(v.leaseEndMs) };
    check(`sign: ${v.name}`, kit.sign(v.seed, claims) === v.fence);
  }
  for (const v of vectors.verify) {
    const got = outcome(() => kit.verify(v.fence, ring));
    if (v.error) check(`verify: ${v.name}`, 'error' in got && got.error === v.error);
    else {
      const f = 'ok' in got ? got.ok : undefined;
      const e = v.expect;
      check(
        `verify: ${v.name}`,
        f !== undefined &&
          f.keyId === e.keyId &&
          f.namespace === e.namespace &&
          f.lock === e.lock &&
          f.token === BigInt(e.token) &&
          f.leaseEndMs === (e.leaseEndMs === null ? null : BigInt(e.leaseEndMs)),
      );
    }
  }
  for (const v of vectors.bind) {
    const got = outcome(() => kit.admit(only(v.fence), { keys: ring, namespace: v.namespace }, v.lock));
    check(`bind: ${v.name}`, v.error === null ? 'ok' in got : 'error' in got && got.error === v.error);
  }
  for (const v of vectors.leaseEnd) {
    const { namespace, lock } = parseSignedFence(v.fence);
    const got = outcome(() => kit.admit(only(v.fence), { keys: ring, namespace, leaseEndSkewMs: Number(v.skewMs) }, lock, Number(v.nowMs)));
    check(`leaseEnd: ${v.name}`, v.admitted ? 'ok' in got : 'error' in got && got.error === 'lease_ended');
  }
  for (const v of vectors.headers) {
    const h = v.headers as Partial<FenceValues>;
    const values = { fence: h.fence ?? [], lock: h.lock ?? [], token: h.token ?? [] };
    const got = outcome(() => kit.admit(values, { keys: ring, acceptUnsigned: v.acceptUnsigned }, 'orders'));
    if (v.error) check(`headers: ${v.name}`, 'error' in got && got.error === v.error);
    else check(`headers: ${v.name}`, 'ok' in got && got.ok.signed === (v.expect === 'signed'));
  }
  return failed;
}

describe('signed-fence.json', () => {
  it('the kit passes every vector', () => {
    expect(runVectors(realKit)).toEqual([]);
    const count = ['badKeys', 'sign', 'verify', 'bind', 'leaseEnd', 'headers'].map((k) => vectors[k].length).reduce((a, b) => a + b);
    expect(count).toBeGreaterThan(50); // the file was read, not an empty one
  });

  it('the wire names are the ones the file sets, for HTTP and gRPC', () => {
    expect(FENCE_HEADERS).toEqual(vectors.wire.http);
    expect(FENCE_METADATA).toEqual(vectors.wire.grpc);
  });

  // Each wrong kit differs from the real one in one rule, and must fail the file where that rule is tested.
  const wrongKits: [string, Kit, string][] = [
    [
      'a verifier that skips the signature',
      {
        ...realKit,
        verify: (text, ring) => {
          const fence = parseSignedFence(text);
          if (!ring.has(fence.keyId)) throw FenceRefusal.unknownKey(fence.keyId);
          return fence;
        },
      },
      'verify: forged token (altered after signing)',
    ],
    [
      'a guard that matches the lock by prefix',
      {
        ...realKit,
        admit: (values, rules, lock, nowMs) => {
          const fence = admitFence(values, FENCE_HEADERS, rules, undefined, nowMs);
          if (!lock.startsWith(fence.lock)) throw FenceRefusal.anotherLock(fence.lock, lock);
          return fence;
        },
      },
      'bind: a lock whose name only starts the same',
    ],
    [
      "a guard that ignores the unsigned headers' disagreement",
      {
        ...realKit,
        admit: (values, rules, lock, nowMs) =>
          admitFence(values.fence.length > 0 ? { ...values, lock: [], token: [] } : values, FENCE_HEADERS, rules, lock, nowMs),
      },
      'headers: unsigned token disagrees',
    ],
    [
      'a guard that ignores the namespace',
      { ...realKit, admit: (values, rules, lock, nowMs) => admitFence(values, FENCE_HEADERS, { ...rules, namespace: undefined }, lock, nowMs) },
      'bind: another namespace',
    ],
    [
      'a lease-end check that refuses at the end plus the skew (>= instead of >)',
      {
        ...realKit,
        admit: (values, rules, lock, nowMs) =>
          admitFence(
            values,
            FENCE_HEADERS,
            { ...rules, leaseEndSkewMs: rules.leaseEndSkewMs === undefined ? undefined : rules.leaseEndSkewMs - 1 },
            lock,
            nowMs,
          ),
      },
      'leaseEnd: at the end plus the skew',
    ],
    [
      'a guard that takes unsigned fences where signed ones are required',
      { ...realKit, admit: (values, rules, lock, nowMs) => admitFence(values, FENCE_HEADERS, { ...rules, acceptUnsigned: true }, lock, nowMs) },
      'headers: unsigned only, signed required',
    ],
    [
      'a key loader that trusts kid instead of computing it from x',
      {
        ...realKit,
        loadKeys: (jwks) =>
          FenceKeyRing.fromJwks({
            keys: jwks.keys.map((k) => ({ ...(k as object), kid: fenceKeyId(Buffer.from(String((k as { x: unknown }).x), 'base64url')) })),
          }),
      },
      'badKeys: kid does not match x',
    ],
    [
      'a verifier that accepts a sent-twice header by keeping the first',
      {
        ...realKit,
        admit: (values, rules, lock, nowMs) =>
          admitFence({ fence: values.fence.slice(0, 1), lock: values.lock.slice(0, 1), token: values.token.slice(0, 1) }, FENCE_HEADERS, rules, lock, nowMs),
      },
      'headers: signed fence twice',
    ],
  ];
  it.each(wrongKits)('negative control: %s fails the file', (_, kit, caughtBy) => {
    const failed = runVectors(kit);
    expect(failed).toContain(caughtBy);
  });

  it('a key that fails its check is named in the error, with what is wrong', () => {
    for (const v of vectors.badKeys) {
      expect(() => FenceKeyRing.fromJwks({ keys: [v.jwk] }, 'the test set')).toThrow(/the test set, key 1 of 1/);
    }
    expect(() => FenceKeyRing.fromJwks({ keys: [vectors.badKeys[0].jwk] })).toThrow(`has kid "${vectors.badKeys[0].jwk.kid}", but the id of its public key is`);
    expect(() => FenceKeyRing.fromJwks('{"keys":[]}')).toThrow('has no keys');
    expect(() => FenceKeyRing.fromJwks('not json')).toThrow('is not JSON');
  });
});
