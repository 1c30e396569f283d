// Who a caller is and what its role may call, without a server.
import { describe, expect, it } from 'vitest';
import { hashApiKey, newApiKey } from '../../src/auth/api-keys';
import { Credentials, presentedKey } from '../../src/auth/credentials';
import { needsCredentials, roleAllows } from '../../src/auth/roles';

const LOCK = '/holdfast.v1.LockService/';

describe('roles', () => {
  it('gives read Inspect, CheckFencingToken, Watch and Session, lock those and the lock calls, admin everything', () => {
    const methods = [
      'Acquire',
      'Release',
      'Renew',
      'Hold',
      'SetValue',
      'AcquireSet',
      'ReleaseSet',
      'HoldSet',
      'Inspect',
      'CheckFencingToken',
      'Watch',
      'Session',
    ];
    const allowed = (role: 'read' | 'lock' | 'admin') => methods.filter((m) => roleAllows(role, LOCK + m));
    // Any role opens a Session; each of its operations is then checked as its unary RPC (session-observe.test.ts).
    expect(allowed('read')).toEqual(['Inspect', 'CheckFencingToken', 'Watch', 'Session']);
    expect(allowed('lock')).toEqual(methods);
    expect(allowed('admin')).toEqual(methods);
    expect(roleAllows('lock', '/holdfast.v1.AdminService/GetServerStats')).toBe(false);
    expect(roleAllows('admin', '/holdfast.v1.AdminService/GetServerStats')).toBe(true);
    // A method no role lists yet is admin's alone.
    expect(roleAllows('lock', `${LOCK}SomethingNew`)).toBe(false);
  });

  it('asks no credentials of health and reflection', () => {
    expect(needsCredentials('/grpc.health.v1.Health/Check')).toBe(false);
    expect(needsCredentials('/grpc.reflection.v1.ServerReflection/ServerReflectionInfo')).toBe(false);
    expect(needsCredentials(`${LOCK}Acquire`)).toBe(true);
  });
});

describe('credentials', () => {
  const key = newApiKey();
  const other = newApiKey();
  const credentials = new Credentials(
    [
      { name: 'first', sha256: hashApiKey(other), namespace: 'b', role: 'read' },
      { name: 'app', sha256: hashApiKey(key), namespace: 'a', role: 'lock' },
    ],
    [{ name: 'batch', subject: { O: 'payments', CN: 'batch' }, namespace: 'p', role: 'read' }],
  );
  const subject = (attributes: Record<string, string[]>) => ({ subject: { commonName: attributes.CN?.[0] ?? '', text: '', attributes } });

  it('knows a key by its hash, and no other', () => {
    expect(credentials.principalOf(presentedKey(key))).toEqual({ name: 'app', namespace: 'a', role: 'lock' });
    expect(credentials.principalOf(presentedKey(other))).toMatchObject({ name: 'first' });
    expect(credentials.principalOf(presentedKey(`${key}x`))).toBeUndefined();
    expect(credentials.principalOf(presentedKey(hashApiKey(key)))).toBeUndefined(); // the hash is not the key
  });

  it('knows a certificate whose subject has every attribute given', () => {
    expect(credentials.principalOf(subject({ O: ['payments'], CN: ['batch'] }))).toMatchObject({ name: 'batch', namespace: 'p' });
    expect(credentials.principalOf(subject({ O: ['payments'], OU: ['x'], CN: ['batch'] }))).toMatchObject({ name: 'batch' });
    expect(credentials.principalOf(subject({ CN: ['batch'] }))).toBeUndefined();
    expect(credentials.principalOf(subject({ O: ['payments'], CN: ['other'] }))).toBeUndefined();
  });

  it('is configured only with at least one key or certificate', () => {
    expect(credentials.configured).toBe(true);
    expect(new Credentials().configured).toBe(false);
  });
});
