// The request byte check: its field table is the .proto's, it refuses what ts-proto would decode
// wrongly or throw on, and it accepts everything protobuf says is valid. No server, no Redis.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MethodDefinition } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { LockServiceService } from '../../gen/holdfast/v1/lock';
import { guardRequests } from '../../src/transport/decode';
import { checkMessageBytes, readRequestShapes, streamedOpOf, type MessageShape } from '../../src/transport/wire';
import { NOT_UTF8, bytesField, message, randomBytes, tag, varint, varintField } from '../support/wire-bytes';

const PROTO_DIR = join(__dirname, '..', '..', 'proto');
const shapes = readRequestShapes('holdfast/v1/lock.proto', [PROTO_DIR]);
const methods = Object.values(LockServiceService) as unknown as MethodDefinition<Record<string, unknown>, unknown>[];
const shapeOf = (path: string): MessageShape => shapes.get(path)!;
const acquire = shapeOf(LockServiceService.acquire.path);
const camel = (protoName: string) => protoName.replace(/_(.)/g, (_, c: string) => c.toUpperCase());

/** Request fields ts-proto decodes to [] when absent, and what they hold. */
const REPEATED: Record<string, 'string' | 'ReleaseRequest'> = { names: 'string', members: 'ReleaseRequest' };
const FULL_REPEATED = { string: ['x\u00e9\u{1f512}', 'y'], ReleaseRequest: [{ name: 'x\u00e9\u{1f512}', token: 't', holdId: 'h' }] };

describe('the field table comes from the .proto', () => {
  it('has every method of the generated service', () => {
    expect([...shapes.keys()].sort()).toEqual(methods.map((m) => m.path).sort());
    expect(acquire.typeName).toBe('holdfast.v1.AcquireRequest');
  });

  it.each(methods.map((m) => [m.path, m] as const))('%s: the UTF-8-checked fields are exactly the string fields ts-proto generated', (path, method) => {
    // ts-proto decodes no bytes to all defaults: '' for a string (int64s are '0' with forceLong=string).
    const defaults = method.requestDeserialize(Buffer.alloc(0));
    const stringFields = Object.keys(defaults).filter((k) => defaults[k] === '' || REPEATED[k] === 'string');
    const fields = shapeOf(path).fields;
    const checked = fields.filter((f) => f?.utf8).map((f) => camel(f!.name));
    expect(checked.sort()).toEqual(stringFields.sort());
    // Strings inside a submessage are checked by its own shape.
    expect(checked.length + fields.filter((f) => f?.message?.fields.some((g) => g?.utf8)).length).toBeGreaterThan(0);
  });

  it.each(methods.map((m) => [m.path, m] as const))('%s: a message ts-proto encodes with every field set passes, wire types and all', (path, method) => {
    const defaults = method.requestDeserialize(Buffer.alloc(0));
    // A oneof's members decode to undefined (a SessionRequest's operations): each is a request message its own method's case fills.
    const full = Object.fromEntries(
      Object.entries(defaults)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, k in REPEATED ? FULL_REPEATED[REPEATED[k]] : v === '' ? 'x\u00e9\u{1f512}' : v === '0' ? '5' : typeof v === 'number' ? 2 : !v]),
    );
    const bytes = method.requestSerialize(full);
    expect(checkMessageBytes(bytes, shapeOf(path))).toBeUndefined();
    expect(method.requestDeserialize(bytes)).toEqual(full);
  });

  it('reads repeated, packed, fixed-width and bytes fields, checks strings inside submessages, and refuses recursive ones', () => {
    const dir = mkdtempSync(join(tmpdir(), 'holdfast-wire-'));
    try {
      writeFileSync(
        join(dir, 'kinds.proto'),
        `syntax = "proto3"; package t.v1;
         service S { rpc Do(Kinds) returns (Kinds); }
         message Kinds { repeated int64 ids = 1; repeated string tags = 2; bytes raw = 3; fixed32 f = 4; double d = 5; }`,
      );
      const kinds = readRequestShapes('kinds.proto', [dir]).get('/t.v1.S/Do')!;
      expect(kinds.fields.map((f) => f && [f.name, f.wireType, f.packable, f.utf8]).filter(Boolean)).toEqual([
        ['ids', 0, true, false],
        ['tags', 2, false, true],
        ['raw', 2, false, false],
        ['f', 5, false, false],
        ['d', 1, false, false],
      ]);
      const packed = message(tag(1, 2), varint(3), varint(1), varint(2), varint(3));
      expect(checkMessageBytes(message(packed, varintField(1, 4)), kinds)).toBeUndefined();
      expect(checkMessageBytes(message(bytesField(2, 'ok'), bytesField(2, NOT_UTF8['byte 0xff'])), kinds)?.message).toBe('tags is not valid UTF-8');
      expect(checkMessageBytes(bytesField(3, NOT_UTF8['byte 0xff']), kinds)).toBeUndefined(); // bytes are bytes

      writeFileSync(
        join(dir, 'nested.proto'),
        `syntax = "proto3"; package t.v1; service S { rpc Do(Outer) returns (Outer); } message Inner { string s = 1; } message Outer { repeated Inner inner = 1; }`,
      );
      const outer = readRequestShapes('nested.proto', [dir]).get('/t.v1.S/Do')!;
      expect(checkMessageBytes(bytesField(1, bytesField(1, 'ok')), outer)).toBeUndefined();
      expect(checkMessageBytes(message(bytesField(1, bytesField(1, 'ok')), bytesField(1, bytesField(1, NOT_UTF8['byte 0xff']))), outer)?.message).toBe(
        'inner.s is not valid UTF-8',
      );
      expect(checkMessageBytes(bytesField(1, tag(1, 7)), outer)?.message).toBe('request is not a valid t.v1.Outer: inner: s has wire type 7, not 2');
      writeFileSync(join(dir, 'loop.proto'), `syntax = "proto3"; package t.v1; service S { rpc Do(Node) returns (Node); } message Node { Node next = 1; }`);
      expect(() => readRequestShapes('loop.proto', [dir])).toThrow(/t\.v1\.Node\.next: .* not a top-level, non-recursive message/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('UTF-8', () => {
  const cases = methods.flatMap((m) =>
    shapeOf(m.path)
      .fields.filter((f) => f?.utf8)
      .map((f) => [m.path, f!.name, f!] as const),
  );

  it.each(cases)('%s: %s must be UTF-8', (path, name, field) => {
    const number = shapeOf(path).fields.indexOf(field);
    for (const bad of Object.values(NOT_UTF8)) {
      const bytes = message(bytesField(99, 'an unknown field first'), bytesField(number, bad));
      expect(checkMessageBytes(bytes, shapeOf(path))).toEqual({ kind: 'invalid_utf8', message: `${name} is not valid UTF-8` });
    }
  });

  it('accepts U+FFFD itself, and 2-, 3- and 4-byte characters', () => {
    const replacement = Buffer.from([0x6c, 0xef, 0xbf, 0xbd]);
    expect(checkMessageBytes(bytesField(1, replacement), acquire)).toBeUndefined();
    expect(LockServiceService.acquire.requestDeserialize(bytesField(1, replacement)).name).toBe('l\ufffd');
    expect(checkMessageBytes(bytesField(1, 'é€🔒'), acquire)).toBeUndefined();
  });

  it('does not check unknown fields: they may be bytes', () => {
    expect(checkMessageBytes(message(bytesField(1, 'n'), bytesField(99, NOT_UTF8['byte 0xff'])), acquire)).toBeUndefined();
  });
});

describe('malformed bytes', () => {
  const fields = [bytesField(1, 'orders/42'), bytesField(2, 'worker'), varintField(3, 30000), bytesField(7, 'req-0123456789abcdef')];
  const valid = message(...fields);
  const malformed = (why: string) => ({ kind: 'malformed', message: `request is not a valid holdfast.v1.AcquireRequest: ${why}` });

  it('accepts every valid encoding: empty, unknown fields of each wire type, groups, non-minimal varints, repeats', () => {
    expect(checkMessageBytes(Buffer.alloc(0), acquire)).toBeUndefined();
    expect(checkMessageBytes(valid, acquire)).toBeUndefined();
    const unknown = message(
      varintField(20, 2n ** 64n - 1n),
      tag(21, 1),
      Buffer.alloc(8),
      bytesField(22, Buffer.from([0, 1, 2])),
      tag(23, 3),
      varintField(1, 5),
      tag(24, 3),
      tag(24, 4),
      bytesField(2, NOT_UTF8['byte 0xff']),
      tag(23, 4),
      tag(25, 5),
      Buffer.alloc(4),
    );
    expect(checkMessageBytes(message(valid, unknown), acquire)).toBeUndefined();
    const padded = message(varint(10, 3), varint(2, 4), Buffer.from('ab'), tag(3, 0), varint(100, 8));
    expect(checkMessageBytes(padded, acquire)).toBeUndefined();
    expect(LockServiceService.acquire.requestDeserialize(padded)).toMatchObject({ name: 'ab', ttlMs: '100' });
    expect(checkMessageBytes(message(bytesField(1, 'a'), bytesField(1, 'b')), acquire)).toBeUndefined(); // last one wins
  });

  it('refuses truncation anywhere inside a field, and accepts cuts between fields', () => {
    const boundaries = new Set<number>([0]);
    fields.reduce((at, field) => (boundaries.add(at + field.length), at + field.length), 0);
    for (let cut = 0; cut <= valid.length; cut++) {
      const problem = checkMessageBytes(valid.subarray(0, cut), acquire);
      if (boundaries.has(cut)) expect(problem, `cut at ${cut}`).toBeUndefined();
      else expect(problem, `cut at ${cut}`).toEqual(malformed('it ends inside a field'));
    }
  });

  it('refuses known fields with the wrong wire type, which ts-proto would silently skip', () => {
    expect(checkMessageBytes(varintField(1, 7), acquire)).toEqual(malformed('name has wire type 0, not 2'));
    expect(checkMessageBytes(bytesField(3, '30000'), acquire)).toEqual(malformed('ttl_ms has wire type 2, not 0'));
    expect(checkMessageBytes(message(tag(6, 5), Buffer.alloc(4)), acquire)).toEqual(malformed('limit has wire type 5, not 0'));
    expect(checkMessageBytes(message(tag(2, 3), tag(2, 4)), acquire)).toEqual(malformed('owner has wire type 3, not 2'));
  });

  it('refuses over-long varints, field number 0, wire types 6 and 7, stray and unclosed groups', () => {
    expect(checkMessageBytes(message(tag(3, 0), Buffer.alloc(10, 0xff), Buffer.from([0x01])), acquire)).toEqual(malformed('a varint is longer than 64 bits'));
    expect(checkMessageBytes(message(tag(3, 0), Buffer.alloc(9, 0xff), Buffer.from([0x02])), acquire)).toEqual(malformed('a varint is longer than 64 bits'));
    expect(checkMessageBytes(message(Buffer.alloc(10, 0x8a), Buffer.from([0x00])), acquire)).toEqual(malformed('a varint is longer than 64 bits'));
    expect(checkMessageBytes(message(valid, Buffer.from([0x00, 0x00])), acquire)).toEqual(malformed('field number 0 is out of range'));
    expect(checkMessageBytes(varint(2 ** 29 * 8), acquire)).toEqual(malformed('field number 536870912 is out of range'));
    expect(checkMessageBytes(tag(9, 6), acquire)).toEqual(malformed('wire type 6 does not exist'));
    expect(checkMessageBytes(tag(9, 7), acquire)).toEqual(malformed('wire type 7 does not exist'));
    expect(checkMessageBytes(tag(9, 4), acquire)).toEqual(malformed('an end-group tag for field 9 closes no group'));
    expect(checkMessageBytes(message(tag(9, 3), tag(8, 4)), acquire)).toEqual(malformed('an end-group tag for field 8 closes no group'));
    expect(checkMessageBytes(message(valid, tag(9, 3)), acquire)).toEqual(malformed('it ends inside a field'));
    expect(checkMessageBytes(message(...Array.from({ length: 101 }, () => tag(9, 3))), acquire)).toEqual(malformed('groups are nested too deep'));
    expect(checkMessageBytes(message(tag(1, 2), varint(2 ** 40), Buffer.from('x')), acquire)).toEqual(malformed('it ends inside a field'));
  });
});

describe('the guarded deserializer', () => {
  const guarded = guardRequests(LockServiceService, {}, { shapes, onRejected: () => {} }).service;
  const keys = Object.keys(LockServiceService) as (keyof typeof LockServiceService)[];

  it('decodes valid requests exactly as the generated decoder does', () => {
    const bytes = message(bytesField(1, 'orders/42'), bytesField(2, 'w'), varintField(5, 2), varintField(6, 3), bytesField(7, 'r'));
    expect(guarded.acquire.requestDeserialize(bytes)).toEqual(LockServiceService.acquire.requestDeserialize(bytes));
  });

  it('never throws, on random bytes or on valid messages with bytes flipped, and never lets a replacement character in', () => {
    const valid = message(bytesField(1, 'orders/42'), bytesField(2, 'worker'), bytesField(3, 'token-abc'), varintField(4, 1));
    for (let seed = 1; seed <= 2000; seed++) {
      const noise = randomBytes(seed, 1 + (seed % 64));
      const flipped = Buffer.from(valid);
      flipped[seed % flipped.length] ^= 1 << (seed % 8);
      for (const input of [noise, flipped, valid.subarray(0, seed % valid.length)]) {
        for (const key of keys) {
          let request: unknown;
          expect(() => (request = guarded[key].requestDeserialize(input)), `${key}, seed ${seed}`).not.toThrow();
          if (checkMessageBytes(input, shapeOf(LockServiceService[key].path)) === undefined && !input.includes(Buffer.from([0xef, 0xbf, 0xbd]))) {
            expect(JSON.stringify(request), `${key}, seed ${seed}`).not.toContain('\ufffd');
          }
        }
      }
    }
  });
});

describe('a session request the walk refused: its op_id and operation, read leniently', () => {
  const session = shapeOf(LockServiceService.session.path);
  const acquireBytes = (name: Buffer | string) => message(bytesField(1, name), bytesField(2, 'worker'));

  it('reads a uint64 op_id past 2^53 exactly, and checks the operation as its unary request', () => {
    const bytes = message(varintField(1, 2n ** 64n - 1n), bytesField(2, acquireBytes(NOT_UTF8['byte 0xff'])));
    expect(checkMessageBytes(bytes, session)?.message).toBe('acquire.name is not valid UTF-8');
    const { opId, op } = streamedOpOf(bytes, session);
    expect(opId).toBe('18446744073709551615');
    expect(op && checkMessageBytes(op.bytes, op.shape)).toEqual({ kind: 'invalid_utf8', message: 'name is not valid UTF-8' });
  });

  it('stops at the first damage: an op_id after it is not read', () => {
    const bytes = message(tag(1, 7), varintField(1, 5));
    expect(streamedOpOf(bytes, session)).toEqual({});
    expect(streamedOpOf(message(varintField(1, 5), tag(1, 7)), session)).toEqual({ opId: '5' });
  });
});
