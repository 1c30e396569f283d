// Wire request checks: every bad field is refused with a message naming it, before any engine call.
import { describe, expect, it } from 'vitest';
import { LockMode, type AcquireRequest } from '../../gen/holdfast/v1/lock';
import { LockError } from '../../src/engine/errors';
import { Mode } from '../../src/engine/types';
import { checkFencingToken, checkMillis, toAcquireParams } from '../../src/transport/requests';

const request = (fields: Partial<AcquireRequest>): AcquireRequest => ({
  name: 'n',
  owner: '',
  ttlMs: '0',
  waitTimeoutMs: '0',
  mode: LockMode.LOCK_MODE_UNSPECIFIED,
  limit: 0,
  requestId: '',
  value: '',
  ...fields,
});

describe('toAcquireParams', () => {
  it('fills in defaults: server ttl, exclusive, limit 1', () => {
    expect(toAcquireParams(request({}), 30000)).toEqual({
      name: 'n',
      owner: '',
      ttlMs: 30000,
      waitMs: 0,
      mode: Mode.EXCLUSIVE,
      limit: 1,
      requestId: '',
      holdId: '',
      value: '',
    });
    expect(toAcquireParams(request({ mode: LockMode.LOCK_MODE_SHARED, limit: 1 }), 30000)).toMatchObject({ mode: Mode.SHARED, limit: 1 });
    expect(toAcquireParams(request({ limit: 5, ttlMs: '10', waitTimeoutMs: '86400000' }), 30000)).toMatchObject({ limit: 5, ttlMs: 10, waitMs: 86_400_000 });
  });

  it.each([
    [{ name: '' }, 'name'],
    [{ name: 'x'.repeat(513) }, 'name'],
    [{ name: 'tab\there' }, 'name'],
    [{ name: 'c1\u0085' }, 'name'],
    [{ ttlMs: '9' }, 'ttl_ms'],
    [{ ttlMs: '18446744073709551615' }, 'ttl_ms'],
    [{ waitTimeoutMs: '-9223372036854775808' }, 'wait_timeout_ms'],
    [{ mode: 3 as LockMode }, 'mode'],
    [{ mode: LockMode.LOCK_MODE_SHARED, limit: 2 }, 'limit'],
    [{ requestId: 'req-1' }, 'request_id'],
    [{ owner: 'é'.repeat(257) }, 'owner'],
    [{ requestId: 'a\u0000' }, 'request_id'],
  ])('refuses %o naming %s', (fields, field) => {
    let error: unknown;
    try {
      toAcquireParams(request(fields), 30000);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(LockError);
    expect((error as LockError).kind).toBe('invalid');
    expect((error as LockError).message).toContain(field);
  });
});

describe('number fields', () => {
  it('checks 64-bit values as BigInt before turning them into numbers', () => {
    expect(checkMillis('max_hold_ms', '0', 1, 10, 'none')).toBe(0);
    expect(() => checkMillis('max_hold_ms', '9007199254740993', 1, 10)).toThrow(/max_hold_ms/);
    expect(checkFencingToken('0001795349990723123')).toBe('1795349990723123');
    expect(() => checkFencingToken('0')).toThrow(/fencing_token/);
  });
});
