// Every bad-input case of the unary RPCs, sent as operations on one Session: each gets the status
// code and message its unary twin gets (asked of the same server, byte for byte the same request),
// nothing reaches Redis, and the session keeps working. A message whose op_id cannot be read at
// all ends the session with INVALID_ARGUMENT, never INTERNAL.
import { credentials, makeGenericClientConstructor, status, type Client, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AcquireRequest,
  AcquireSetRequest,
  CheckFencingTokenRequest,
  HoldRequest,
  HoldSetRequest,
  InspectRequest,
  LockMode,
  LockServiceService,
  ReleaseRequest,
  ReleaseSetRequest,
  RenewRequest,
  type SessionResponse,
  SetValueRequest,
} from '../../gen/holdfast/v1/lock';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { NOT_UTF8, bytesField, message, randomBytes, tag, varintField } from '../support/wire-bytes';

const env = useServers(1);
const identity = (b: Buffer) => b;
// The generated service with identity serializers on the way out: requests go exactly as written.
const Raw = makeGenericClientConstructor(
  Object.fromEntries(
    Object.entries(LockServiceService).map(([k, m]) => [
      k,
      { ...m, requestSerialize: identity, responseDeserialize: k === 'session' ? m.responseDeserialize : identity },
    ]),
  ),
  'LockService',
);
let raw: Client;
beforeAll(() => void (raw = new Raw(env.servers[0].addr, credentials.createInsecure())));
afterAll(() => raw?.close());

type Op = 'acquire' | 'release' | 'renew' | 'hold' | 'inspect' | 'setValue' | 'checkFencingToken' | 'acquireSet' | 'releaseSet' | 'holdSet';
/** Each operation's field in SessionRequest, and its request message type. */
const FIELD: Record<Op, number> = {
  acquire: 2,
  release: 3,
  renew: 4,
  hold: 5,
  inspect: 6,
  setValue: 7,
  checkFencingToken: 8,
  acquireSet: 12,
  releaseSet: 13,
  holdSet: 14,
};
const TYPE: Record<Op, string> = {
  acquire: 'AcquireRequest',
  release: 'ReleaseRequest',
  renew: 'RenewRequest',
  hold: 'HoldRequest',
  inspect: 'InspectRequest',
  setValue: 'SetValueRequest',
  checkFencingToken: 'CheckFencingTokenRequest',
  acquireSet: 'AcquireSetRequest',
  releaseSet: 'ReleaseSetRequest',
  holdSet: 'HoldSetRequest',
};
const CODEC = {
  acquire: AcquireRequest,
  release: ReleaseRequest,
  renew: RenewRequest,
  hold: HoldRequest,
  inspect: InspectRequest,
  setValue: SetValueRequest,
  checkFencingToken: CheckFencingTokenRequest,
  acquireSet: AcquireSetRequest,
  releaseSet: ReleaseSetRequest,
  holdSet: HoldSetRequest,
} as const;

function encode(op: Op, fields: Record<string, unknown>): Buffer {
  const codec = CODEC[op] as { encode(m: unknown): { finish(): Uint8Array }; fromPartial(o: object): unknown };
  return Buffer.from(codec.encode(codec.fromPartial(fields)).finish());
}

/** The unary RPC's status for these request bytes (a Hold or HoldSet: how its stream ends, or OK once it sends). */
function unary(op: Op, body: Buffer): Promise<{ code: number; message: string }> {
  const fn = (raw as unknown as Record<Op, (...args: unknown[]) => unknown>)[op].bind(raw);
  if (op !== 'hold' && op !== 'holdSet') {
    return new Promise((resolve) => fn(body, (err: ServiceError | null) => resolve({ code: err?.code ?? status.OK, message: err?.details ?? '' })));
  }
  const stream = fn(body) as { on(e: string, f: (x: ServiceError) => void): void; cancel(): void };
  return new Promise((resolve) => {
    stream.on('data', () => {
      resolve({ code: status.OK, message: '' });
      stream.cancel();
    });
    stream.on('error', (err) => resolve({ code: err.code, message: err.details }));
  });
}

/** One session over raw bytes: send(opId, op bytes) resolves with the answer of that op_id. */
function rawSession() {
  const call = (raw as unknown as { session(): ClientDuplexStream<Buffer, SessionResponse> }).session();
  const answers = new Map<string, (r: SessionResponse) => void>();
  call.on('data', (r: SessionResponse) => answers.get(r.opId)?.(r));
  const ended = new Promise<{ code: number; details: string }>((resolve) => {
    call.on('error', (err: ServiceError) => resolve({ code: err.code, details: err.details }));
    call.on('status', (s) => s.code === 0 && resolve({ code: 0, details: s.details }));
  });
  let next = 1;
  const sendRaw = (bytes: Buffer, opId: string) => new Promise<SessionResponse>((resolve) => answers.set(opId, resolve) && call.write(bytes));
  const send = (op: Op, body: Buffer) => {
    const opId = String(next++);
    return sendRaw(message(varintField(1, BigInt(opId)), bytesField(FIELD[op], body)), opId);
  };
  return { call, send, sendRaw, ended };
}

const TOKEN = 'c2VjcmV0LXRva2VuLXZhbHVl';
const LONG_VALUE = 'v'.repeat(1025);

/** The field checks of test/e2e/core.test.ts, hold.test.ts and kinds.test.ts, and one per field of the others. */
const FIELD_CASES: [Op, string, Record<string, unknown>][] = [
  ['acquire', 'empty name', { name: '' }],
  ['acquire', 'name over 512 bytes', { name: 'é'.repeat(257) }],
  ['acquire', 'name with a control character', { name: 'a\nb' }],
  ['acquire', 'ttl below 10', { ttlMs: '5' }],
  ['acquire', 'ttl above a day', { ttlMs: '86400001' }],
  ['acquire', 'negative ttl', { ttlMs: '-1' }],
  ['acquire', 'huge ttl', { ttlMs: '9223372036854775807' }],
  ['acquire', 'negative wait', { waitTimeoutMs: '-1' }],
  ['acquire', 'wait above a day', { waitTimeoutMs: '86400001' }],
  ['acquire', 'unknown mode', { mode: 7 }],
  ['acquire', 'shared with a limit', { mode: LockMode.LOCK_MODE_SHARED, limit: 3 }],
  ['acquire', 'owner with a control character', { owner: 'x\u0000' }],
  ['acquire', 'a short request_id', { requestId: 'req-1' }],
  ['acquire', 'a value over 1024 bytes', { value: LONG_VALUE }],
  ['release', 'empty name', { name: '', token: 'x' }],
  ['release', 'empty token', { token: '' }],
  ['release', 'a token that is not a holdfast token', { token: 't'.repeat(129) }],
  ['release', 'a hold_id that is not a holdfast hold id', { token: TOKEN, holdId: 'hold-1' }],
  ['renew', 'ttl below 10', { token: 't', ttlMs: '3' }],
  ['renew', 'empty token', { token: '' }],
  ['inspect', 'name over 512 bytes', { name: 'x'.repeat(513) }],
  ['checkFencingToken', 'fencing token 0', { fencingToken: '0' }],
  ['setValue', 'a value over 1024 bytes', { token: TOKEN, value: LONG_VALUE }],
  ['setValue', 'empty token', { token: '' }],
  ['hold', 'empty name', { name: '' }],
  ['hold', 'ttl 1', { ttlMs: '1' }],
  ['hold', 'negative max_hold_ms', { maxHoldMs: '-5' }],
  ['hold', 'unknown mode', { mode: 7 }],
  ['hold', 'a value over 1024 bytes', { value: LONG_VALUE }],
  ['acquireSet', 'no names', { names: [] }],
  ['acquireSet', 'an empty name among them', { names: ['a', ''] }],
  ['acquireSet', 'the same name twice', { names: ['a', 'a'] }],
  ['acquireSet', 'ttl below 10', { names: ['a'], ttlMs: '5' }],
  ['acquireSet', 'a value over 1024 bytes', { names: ['a'], value: LONG_VALUE }],
  ['releaseSet', 'no members', { members: [] }],
  ['releaseSet', 'a member with an empty token', { members: [{ name: 'a', token: '' }] }],
  ['holdSet', 'no names', { names: [] }],
  ['holdSet', 'an empty name among them', { names: ['a', ''] }],
  ['holdSet', 'the same name twice', { names: ['a', 'a'] }],
  ['holdSet', 'more names than a set may have', { names: Array.from({ length: 65 }, (_, i) => `n${i}`) }],
  ['holdSet', 'ttl below 10', { names: ['a'], ttlMs: '5' }],
  ['holdSet', 'negative max_hold_ms', { names: ['a'], maxHoldMs: '-5' }],
  ['holdSet', 'unknown mode', { names: ['a'], mode: 7 }],
  ['holdSet', 'a value over 1024 bytes', { names: ['a'], value: LONG_VALUE }],
];

/** Each string field of each operation's request, by number (bad-input.test.ts's table). */
const STRING_FIELDS: [Op, string, number][] = [
  ['acquire', 'name', 1],
  ['acquire', 'owner', 2],
  ['acquire', 'request_id', 7],
  ['acquire', 'value', 8],
  ['release', 'name', 1],
  ['release', 'token', 2],
  ['release', 'hold_id', 3],
  ['renew', 'name', 1],
  ['renew', 'token', 2],
  ['hold', 'name', 1],
  ['hold', 'owner', 2],
  ['hold', 'value', 9],
  ['inspect', 'name', 1],
  ['setValue', 'name', 1],
  ['setValue', 'token', 2],
  ['setValue', 'value', 3],
  ['checkFencingToken', 'name', 1],
  ['acquireSet', 'names', 1],
  ['acquireSet', 'owner', 2],
  ['acquireSet', 'value', 6],
  ['holdSet', 'names', 1],
  ['holdSet', 'owner', 2],
  ['holdSet', 'value', 7],
];

const MALFORMED: Record<string, Buffer> = {
  'truncated inside a string': bytesField(1, 'orders/42').subarray(0, 6),
  'length flipped past the end': Buffer.from([0x0a, 0x7f, 0x61, 0x62]),
  'a string field sent as a varint': varintField(1, 5),
  'field number 0': message(bytesField(1, 'n'), Buffer.from([0x00, 0x00])),
  'wire type 7': tag(1, 7),
  'an end-group that closes nothing': tag(9, 4),
};

describe('bad operations on a session answer as their unary twins, and the session goes on', () => {
  it('field checks: the same code and message, nothing reaches Redis', async () => {
    const s = rawSession();
    const keysBefore = await env.redis.client.dbsize();
    for (const [op, label, fields] of FIELD_CASES) {
      const body = encode(op, { name: uniqueName(), token: TOKEN, ...fields });
      const expected = await unary(op, body);
      expect(expected.code, `${op}: ${label} (unary)`).toBe(status.INVALID_ARGUMENT);
      expect((await s.send(op, body)).error, `${op}: ${label}`).toEqual(expected);
    }
    expect(await env.redis.client.dbsize()).toBeLessThanOrEqual(keysBefore);
    const name = uniqueName();
    expect((await s.send('acquire', encode('acquire', { name }))).acquire?.acquired).toBe(true);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  it('strings that are not UTF-8, in every string field: the same code and message', async () => {
    const s = rawSession();
    for (const [op, field, number] of STRING_FIELDS) {
      for (const [what, bad] of Object.entries(NOT_UTF8)) {
        const body = message(bytesField(number, bad), number === 1 ? Buffer.alloc(0) : bytesField(1, uniqueName()));
        const expected = await unary(op, body);
        expect(expected, `${op}.${field}, ${what} (unary)`).toEqual({ code: status.INVALID_ARGUMENT, message: `${field} is not valid UTF-8` });
        expect((await s.send(op, body)).error, `${op}.${field}, ${what}`).toEqual(expected);
      }
    }
    expect((await s.send('inspect', encode('inspect', { name: uniqueName() }))).inspect?.holders).toEqual([]);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  it('operations that are not a valid message: the same code and message', async () => {
    const s = rawSession();
    for (const op of Object.keys(FIELD) as Op[]) {
      for (const [what, body] of Object.entries(MALFORMED)) {
        const expected = await unary(op, body);
        expect(expected.message, `${op}: ${what} (unary)`).toMatch(new RegExp(`^request is not a valid holdfast\\.v1\\.${TYPE[op]}: `));
        expect((await s.send(op, body)).error, `${op}: ${what}`).toEqual(expected);
      }
    }
    expect((await s.send('acquire', encode('acquire', { name: uniqueName() }))).acquire?.acquired).toBe(true);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  it('a message whose op_id cannot be read ends the session with INVALID_ARGUMENT, never INTERNAL', async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const s = rawSession();
      // Random bytes, after a first byte that no op_id can follow (field 1 sent as a string).
      s.call.write(Buffer.concat([bytesField(1, 'x').subarray(0, 2), randomBytes(seed * 7919, 8 + seed * 3)]));
      s.call.write(message(varintField(1, 1n), bytesField(FIELD.inspect, encode('inspect', { name: uniqueName() }))));
      const ended = await s.ended;
      expect(ended.code, `seed ${seed * 7919}: ${ended.details}`).toBe(status.INVALID_ARGUMENT);
      expect(ended.details).toMatch(/^request is not a valid holdfast\.v1\.SessionRequest: /);
    }
  });
});
