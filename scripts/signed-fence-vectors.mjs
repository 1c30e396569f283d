// Writes clients/conformance/signed-fence.json: the signed fence format's vectors, made with fixed
// test keys (seeds below, never used outside tests) so the file is the same on every run.
// `node scripts/signed-fence-vectors.mjs --check` fails when the committed file differs.
import { createHash, createPrivateKey, createPublicKey, sign } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';

const OUT = new URL('../clients/conformance/signed-fence.json', import.meta.url);
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

function keyFromSeed(seedHex) {
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, Buffer.from(seedHex, 'hex')]), format: 'der', type: 'pkcs8' });
  const raw = createPublicKey(privateKey).export({ format: 'jwk' }).x;
  const kid = createHash('sha256').update(Buffer.from(raw, 'base64url')).digest('base64url').slice(0, 16);
  return { privateKey, seedHex, kid, x: raw };
}

const ring = keyFromSeed('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60'); // RFC 8032 test 1
const second = keyFromSeed('4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb'); // RFC 8032 test 2
const outsider = keyFromSeed('c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7'); // RFC 8032 test 3

const enc = (s) => encodeURIComponent(s);
function fence(key, { kid = key.kid, namespace = 'default', lock, token, leaseEndMs = '', version = 'v1', rawNamespace, rawLock }) {
  const body = [version, kid, rawNamespace ?? enc(namespace), rawLock ?? enc(lock), token, leaseEndMs].join(':');
  return `${body}:${sign(null, Buffer.from(body), key.privateKey).toString('base64url')}`;
}
const jwk = (k) => ({ kty: 'OKP', crv: 'Ed25519', kid: k.kid, x: k.x, alg: 'EdDSA', use: 'sig' });

const good = fence(ring, { lock: 'orders', token: '7', leaseEndMs: '1795000000000' });
const [gv, gk, gn, gl, gt, ge, gs] = good.split(':');
const flip = (s, i) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);

const verify = [
  { name: 'plain', fence: good, expect: { keyId: ring.kid, namespace: 'default', lock: 'orders', token: '7', leaseEndMs: '1795000000000' } },
  {
    name: 'name with a slash, a space, a colon and non-ASCII',
    fence: fence(ring, { lock: 'tenant/a b:c/é', token: '42', leaseEndMs: '1795000000001' }),
    expect: { keyId: ring.kid, namespace: 'default', lock: 'tenant/a b:c/é', token: '42', leaseEndMs: '1795000000001' },
  },
  {
    name: 'no lease end stated (a session keeps the lock)',
    fence: fence(ring, { namespace: 'team-a', lock: 'x', token: '1' }),
    expect: { keyId: ring.kid, namespace: 'team-a', lock: 'x', token: '1', leaseEndMs: null },
  },
  {
    name: 'largest token, signed by the second key of the ring',
    fence: fence(second, { lock: 'x', token: '18446744073709551615', leaseEndMs: '18446744073709551615' }),
    expect: { keyId: second.kid, namespace: 'default', lock: 'x', token: '18446744073709551615', leaseEndMs: '18446744073709551615' },
  },
  {
    name: 'lowercase percent-encoding is valid',
    fence: fence(ring, { lock: 'a/b', rawLock: 'a%2fb', token: '3', leaseEndMs: '5' }),
    expect: { keyId: ring.kid, namespace: 'default', lock: 'a/b', token: '3', leaseEndMs: '5' },
  },
  { name: 'empty string', fence: '', error: 'malformed' },
  { name: 'six fields', fence: [gv, gk, gn, gl, gt, gs].join(':'), error: 'malformed' },
  { name: 'eight fields', fence: `${good}:x`, error: 'malformed' },
  { name: 'truncated signature', fence: good.slice(0, -1), error: 'malformed' },
  { name: 'signature with padding', fence: `${good}==`, error: 'malformed' },
  { name: 'signature not base64url', fence: `${good.slice(0, -1)}+`, error: 'malformed' },
  {
    name: 'signature not canonical base64url (last character has spare bits set)',
    fence: `${good.slice(0, -1)}${String.fromCharCode(good.charCodeAt(good.length - 1) + 1)}`,
    error: 'malformed',
  },
  { name: 'unknown version', fence: fence(ring, { version: 'v2', lock: 'orders', token: '7', leaseEndMs: '1' }), error: 'malformed' },
  { name: 'key id with a bad character', fence: fence(ring, { kid: 'bad.kid', lock: 'orders', token: '7', leaseEndMs: '1' }), error: 'malformed' },
  { name: 'empty key id', fence: fence(ring, { kid: '', lock: 'orders', token: '7', leaseEndMs: '1' }), error: 'malformed' },
  { name: 'empty lock', fence: fence(ring, { lock: '', token: '7', leaseEndMs: '1' }), error: 'malformed' },
  { name: 'empty namespace', fence: fence(ring, { namespace: '', lock: 'orders', token: '7', leaseEndMs: '1' }), error: 'malformed' },
  { name: 'bad percent-encoding', fence: fence(ring, { rawLock: 'a%zz', token: '7', leaseEndMs: '1' }), error: 'malformed' },
  { name: 'percent-encoding that is not UTF-8', fence: fence(ring, { rawLock: 'a%ff', token: '7', leaseEndMs: '1' }), error: 'malformed' },
  { name: 'token zero', fence: fence(ring, { lock: 'orders', token: '0', leaseEndMs: '1' }), error: 'malformed' },
  { name: 'token with a leading zero', fence: fence(ring, { lock: 'orders', token: '07', leaseEndMs: '1' }), error: 'malformed' },
  { name: 'token above uint64', fence: fence(ring, { lock: 'orders', token: '18446744073709551616', leaseEndMs: '1' }), error: 'malformed' },
  { name: 'token with a sign', fence: fence(ring, { lock: 'orders', token: '+7', leaseEndMs: '1' }), error: 'malformed' },
  { name: 'lease end with a leading zero', fence: fence(ring, { lock: 'orders', token: '7', leaseEndMs: '01' }), error: 'malformed' },
  { name: 'lease end not a number', fence: fence(ring, { lock: 'orders', token: '7', leaseEndMs: 'soon' }), error: 'malformed' },
  { name: 'longer than 4096 characters', fence: fence(ring, { lock: 'x'.repeat(4000), token: '7', leaseEndMs: '1' }), error: 'malformed' },
  { name: 'key id not in the ring', fence: fence(outsider, { lock: 'orders', token: '7', leaseEndMs: '1795000000000' }), error: 'unknown_key' },
  {
    name: 'signed by an outsider under a ring key id',
    fence: fence(outsider, { kid: ring.kid, lock: 'orders', token: '7', leaseEndMs: '1795000000000' }),
    error: 'bad_signature',
  },
  { name: 'forged token (altered after signing)', fence: [gv, gk, gn, gl, '18446744073709551615', ge, gs].join(':'), error: 'bad_signature' },
  { name: 'altered lock', fence: [gv, gk, gn, 'orderz', gt, ge, gs].join(':'), error: 'bad_signature' },
  { name: 'altered lease end', fence: [gv, gk, gn, gl, gt, '1895000000000', gs].join(':'), error: 'bad_signature' },
  { name: 'lease end removed', fence: [gv, gk, gn, gl, gt, '', gs].join(':'), error: 'bad_signature' },
  { name: 'same lock written with another valid encoding', fence: [gv, gk, gn, '%6Frders', gt, ge, gs].join(':'), error: 'bad_signature' },
  { name: 'one signature character changed', fence: [gv, gk, gn, gl, gt, ge, flip(gs, 10)].join(':'), error: 'bad_signature' },
  {
    name: 'signature of another fence',
    fence: [gv, gk, gn, gl, gt, ge, fence(ring, { lock: 'orders', token: '8', leaseEndMs: '1795000000000' }).split(':')[6]].join(':'),
    error: 'bad_signature',
  },
];

const bind = [
  { name: 'the resource lock and namespace', fence: good, namespace: 'default', lock: 'orders', error: null },
  { name: 'another lock', fence: good, namespace: 'default', lock: 'payments', error: 'wrong_lock' },
  { name: 'a lock whose name only starts the same', fence: good, namespace: 'default', lock: 'orders/1', error: 'wrong_lock' },
  { name: 'another namespace', fence: good, namespace: 'team-a', lock: 'orders', error: 'wrong_namespace' },
];

const leaseEnd = [
  { name: 'before the end', fence: good, nowMs: '1794999999000', skewMs: '500', admitted: true },
  { name: 'at the end plus the skew', fence: good, nowMs: '1795000000500', skewMs: '500', admitted: true },
  { name: 'past the end plus the skew', fence: good, nowMs: '1795000000501', skewMs: '500', admitted: false },
  { name: 'past the end, within a larger skew', fence: good, nowMs: '1795000002000', skewMs: '5000', admitted: true },
  { name: 'no end stated', fence: verify[2].fence, nowMs: '99999999999999', skewMs: '0', admitted: true },
];

const both = { lock: 'orders', token: '7' };
const headers = [
  { name: 'signed fence alone', headers: { fence: [good] }, acceptUnsigned: false, expect: 'signed' },
  {
    name: 'signed fence with matching unsigned headers',
    headers: { fence: [good], lock: [both.lock], token: [both.token] },
    acceptUnsigned: false,
    expect: 'signed',
  },
  { name: 'unsigned token disagrees', headers: { fence: [good], lock: ['orders'], token: ['8'] }, acceptUnsigned: false, error: 'malformed' },
  { name: 'unsigned lock disagrees', headers: { fence: [good], lock: ['payments'], token: ['7'] }, acceptUnsigned: false, error: 'malformed' },
  { name: 'signed fence twice', headers: { fence: [good, good] }, acceptUnsigned: false, error: 'malformed' },
  {
    name: 'unsigned token twice beside a signed fence',
    headers: { fence: [good], lock: ['orders'], token: ['7', '7'] },
    acceptUnsigned: false,
    error: 'malformed',
  },
  { name: 'unsigned only, signed required', headers: { lock: ['orders'], token: ['7'] }, acceptUnsigned: false, error: 'signed_required' },
  { name: 'unsigned only, unsigned accepted', headers: { lock: ['orders'], token: ['7'] }, acceptUnsigned: true, expect: 'unsigned' },
  { name: 'nothing', headers: {}, acceptUnsigned: true, error: 'missing' },
];

const data = {
  about:
    'Vectors of the signed fence format (clients/conformance/signed-fence.md). Made by scripts/signed-fence-vectors.mjs with RFC 8032 test seeds: never use these keys outside tests. Tokens and times are decimal strings.',
  keys: {
    ring: { keys: [jwk(ring), jwk(second)] },
    outsider: jwk(outsider),
    seeds: { [ring.kid]: ring.seedHex, [second.kid]: second.seedHex, [outsider.kid]: outsider.seedHex },
  },
  badKeys: [
    { name: 'kid does not match x', jwk: { ...jwk(ring), kid: second.kid } },
    { name: 'not Ed25519', jwk: { ...jwk(ring), crv: 'X25519' } },
    { name: 'not OKP', jwk: { ...jwk(ring), kty: 'EC' } },
    { name: 'x not 32 bytes', jwk: { ...jwk(ring), x: ring.x.slice(0, 40) } },
  ],
  sign: [
    { name: 'what a server signs', seed: ring.seedHex, namespace: 'default', lock: 'orders', token: '7', leaseEndMs: '1795000000000', fence: good },
    { name: 'no lease end', seed: ring.seedHex, namespace: 'team-a', lock: 'x', token: '1', leaseEndMs: null, fence: verify[2].fence },
  ],
  verify,
  bind,
  leaseEnd,
  headers,
  wire: {
    http: { fence: 'Holdfast-Fence', lock: 'Holdfast-Fence-Lock', token: 'Holdfast-Fence-Token' },
    grpc: { fence: 'holdfast-fence', lock: 'holdfast-fence-lock', token: 'holdfast-fence-token' },
  },
};

const text = `${JSON.stringify(data, null, 2)}\n`;
if (process.argv.includes('--check')) {
  if (readFileSync(OUT, 'utf8') !== text) {
    console.error('clients/conformance/signed-fence.json is stale: run node scripts/signed-fence-vectors.mjs and commit');
    process.exit(1);
  }
} else {
  writeFileSync(OUT, text);
}
