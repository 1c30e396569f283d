// Turns a plan into request bytes, written field by field (test/support/wire-bytes.ts) so that
// they can be anything: invalid UTF-8, over-long varints, wrong wire types, truncations. Field
// numbers come from the .proto files themselves (and grpc-health-check's), so a new field is
// fuzzed as soon as it exists.
import { join } from 'node:path';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { readRequestShapes } from '../../src/transport/wire';
import { bytesField, message, tag, varint } from '../support/wire-bytes';
import { METHODS, type Body, type Method, type Mutation, type Plan, type Shapes, type Value } from './plans';

export const PATHS: Record<Method, string> = {
  acquire: '/holdfast.v1.LockService/Acquire',
  release: '/holdfast.v1.LockService/Release',
  renew: '/holdfast.v1.LockService/Renew',
  hold: '/holdfast.v1.LockService/Hold',
  inspect: '/holdfast.v1.LockService/Inspect',
  checkFencingToken: '/holdfast.v1.LockService/CheckFencingToken',
  getServerStats: '/holdfast.v1.AdminService/GetServerStats',
  healthCheck: '/grpc.health.v1.Health/Check',
};

/** Each method's request fields (name, wire type, number), read from proto/. */
export function readShapes(): { shapes: Shapes; numbers: Record<Method, Record<string, number>> } {
  const protoDir = join(__dirname, '..', '..', 'proto');
  const all = new Map([
    ...readRequestShapes('holdfast/v1/lock.proto', [protoDir]),
    ...readRequestShapes('holdfast/v1/admin.proto', [protoDir]),
    ...readRequestShapes(healthProtoPath, []),
  ]);
  const shapes = {} as Shapes;
  const numbers = {} as Record<Method, Record<string, number>>;
  for (const method of METHODS) {
    const shape = all.get(PATHS[method]);
    if (!shape) throw new Error(`${PATHS[method]} is not in proto/`);
    shapes[method] = [];
    numbers[method] = {};
    shape.fields.forEach((field, number) => {
      if (!field) return;
      shapes[method].push({ name: field.name, wireType: field.wireType });
      numbers[method][field.name] = number;
    });
  }
  return { shapes, numbers };
}

/** A grant the fuzzer was told of: what `live` values refer to. */
export interface LiveGrant {
  name: string;
  token: string;
  /** '' for a grant made by Acquire. */
  holdId: string;
  fence: string;
  from: 'acquire' | 'hold';
}

export interface BodyContext {
  numbers: Record<Method, Record<string, number>>;
  poolName(i: number): string;
  freshName(): string;
  live?: LiveGrant;
}

function stringBytes(value: Value, ctx: BodyContext): Buffer {
  switch (value.t) {
    case 'text':
      return Buffer.from(value.v, 'utf8');
    case 'bytes':
      return Buffer.from(value.v);
    case 'huge':
      return Buffer.alloc(value.bytes, value.char); // a multi-byte character may be cut at the end: not UTF-8
    case 'pool':
      return Buffer.from(ctx.poolName(value.i));
    case 'fresh':
      return Buffer.concat([Buffer.from(ctx.freshName()), value.suffix ? stringBytes(value.suffix, ctx) : Buffer.alloc(0)]);
    case 'live': {
      const live = ctx.live;
      if (value.what === 'name') return Buffer.from(live?.name ?? ctx.freshName());
      if (value.what === 'token') return Buffer.from(live?.token ?? 'bm8tZ3JhbnQteWV0');
      if (value.what === 'holdId') return Buffer.from(live?.holdId ?? '');
      return Buffer.from(live?.fence ?? '0');
    }
    default:
      throw new Error(`${value.t} is not a string value`);
  }
}

function fieldBytes(number: number, value: Value, ctx: BodyContext): Buffer {
  switch (value.t) {
    case 'varint':
      return Buffer.concat([tag(number, 0), varint(value.v, value.pad ?? 0)]);
    case 'live':
      if (value.what === 'fence') return Buffer.concat([tag(number, 0), varint(BigInt(ctx.live?.fence ?? '0'))]);
      return bytesField(number, stringBytes(value, ctx));
    case 'wrongWire':
      switch (value.wireType) {
        case 0:
          return Buffer.concat([tag(number, 0), varint(1)]);
        case 1:
          return Buffer.concat([tag(number, 1), Buffer.alloc(8, 1)]);
        case 2:
          return bytesField(number, 'x');
        case 3:
          return Buffer.concat([tag(number, 3), tag(number, 4)]);
        case 5:
          return Buffer.concat([tag(number, 5), Buffer.alloc(4, 1)]);
      }
      break;
    default:
      return bytesField(number, stringBytes(value, ctx));
  }
  throw new Error('unreachable');
}

function mutate(bytes: Buffer, mutation: Mutation): Buffer {
  const at = (f: number) => Math.min(bytes.length, Math.floor(f * (bytes.length + 1)));
  switch (mutation.t) {
    case 'truncate':
      return bytes.subarray(0, at(mutation.at));
    case 'flip': {
      if (bytes.length === 0) return Buffer.from([mutation.xor]);
      const copy = Buffer.from(bytes);
      const i = Math.min(copy.length - 1, at(mutation.at));
      copy[i] ^= mutation.xor;
      return copy;
    }
    case 'insert':
      return Buffer.concat([bytes.subarray(0, at(mutation.at)), Buffer.from(mutation.bytes), bytes.subarray(at(mutation.at))]);
    case 'append':
      return Buffer.concat([bytes, Buffer.from(mutation.bytes)]);
  }
}

/** Unknown field numbers: the requests use 1 .. 8. */
const UNKNOWN_FROM = 1000;

export function encodeBody(plan: Plan, ctx: BodyContext): Buffer {
  const body: Body = plan.body;
  if (body.t === 'random') return Buffer.from(body.bytes);
  const numbers = ctx.numbers[plan.method];
  const parts = body.fields.map((field) => {
    const number = numbers[field.name];
    if (number === undefined) throw new Error(`${plan.method} has no field ${field.name}`);
    return fieldBytes(number, field.value, ctx);
  });
  body.unknown.forEach((bytes, i) =>
    parts.push(i % 2 ? bytesField(UNKNOWN_FROM + i, Buffer.from(bytes)) : Buffer.concat([tag(UNKNOWN_FROM + i, 0), varint(bytes.length)])),
  );
  const encoded = message(...parts);
  return body.mutation ? mutate(encoded, body.mutation) : encoded;
}

/** For a report: the body's length and its first bytes in hex. */
export function describeBytes(bytes: Buffer): string {
  const head = bytes.subarray(0, 48).toString('hex');
  return `${bytes.length} bytes: ${head}${bytes.length > 48 ? '…' : ''}`;
}
