// What the bytes of a request must be, and one walk over them that says whether they are.
// The field table comes from the .proto itself at startup, so it cannot drift from the contract.
// ts-proto's decoders are lenient where a lock server must not be: they replace invalid UTF-8
// with U+FFFD (two byte strings would name one lock), stop quietly at a zero tag, and skip a
// known field sent with the wrong wire type (a `limit` the client set would be ignored).
import { isUtf8 } from 'node:buffer';
import { fromBinary } from '@bufbuild/protobuf';
import {
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FileDescriptorProtoSchema,
  type DescriptorProto,
  type FieldDescriptorProto,
} from '@bufbuild/protobuf/wkt';
import { loadSync } from '@grpc/proto-loader';

const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const START_GROUP = 3;
const END_GROUP = 4;
const FIXED32 = 5;

export interface FieldShape {
  /** The proto field name, as error messages give it. */
  name: string;
  wireType: number;
  /** A repeated number may also come packed, as one length-delimited field. */
  packable: boolean;
  /** A `string` field: its bytes must be valid UTF-8. */
  utf8: boolean;
  /** A message field: its bytes are checked as this message. */
  message?: MessageShape;
}

export interface MessageShape {
  /** Full name without the leading dot: holdfast.v1.AcquireRequest. */
  typeName: string;
  /** Indexed by field number. */
  fields: (FieldShape | undefined)[];
}

export type WireProblem = { kind: 'invalid_utf8' | 'malformed'; message: string };

function wireTypeOf(type: Type): number {
  switch (type) {
    case Type.STRING:
    case Type.BYTES:
      return LENGTH_DELIMITED;
    case Type.DOUBLE:
    case Type.FIXED64:
    case Type.SFIXED64:
      return FIXED64;
    case Type.FLOAT:
    case Type.FIXED32:
    case Type.SFIXED32:
      return FIXED32;
    case Type.MESSAGE:
      return LENGTH_DELIMITED;
    case Type.GROUP:
      return -1;
    default:
      return VARINT;
  }
}

/** `inside`: the messages this one is nested in, so that a message containing itself is refused, not walked forever. */
function shapeOf(typeName: string, message: DescriptorProto, messages: Map<string, DescriptorProto>, inside: string[] = []): MessageShape {
  const fields: (FieldShape | undefined)[] = [];
  for (const field of message.field as FieldDescriptorProto[]) {
    const wireType = wireTypeOf(field.type);
    if (wireType < 0) throw new Error(`${typeName}.${field.name} is a group: src/transport/wire.ts does not check groups`);
    const packable = field.label === Label.REPEATED && wireType !== LENGTH_DELIMITED;
    const shape: FieldShape = { name: field.name, wireType, packable, utf8: field.type === Type.STRING };
    if (field.type === Type.MESSAGE) {
      // Descriptors from proto-loader may name it relative to the package: resolve it there.
      const full = field.typeName.startsWith('.') ? field.typeName : `.${typeName.slice(0, typeName.lastIndexOf('.'))}.${field.typeName}`;
      const nested = messages.get(full);
      if (!nested || inside.includes(full)) {
        throw new Error(`${typeName}.${field.name}: ${field.typeName} is not a top-level, non-recursive message of the contract`);
      }
      shape.message = shapeOf(full.slice(1), nested, messages, [...inside, `.${typeName}`]);
    }
    fields[field.number] = shape;
  }
  return { typeName, fields };
}

/** The request shape of every method in `protoFile`, by gRPC path (/holdfast.v1.LockService/Acquire). */
export function readRequestShapes(protoFile: string, includeDirs: string[]): Map<string, MessageShape> {
  // keepCase: field names as the .proto spells them (request_id), which is what error messages name.
  const definition = loadSync(protoFile, { keepCase: true, includeDirs });
  const withFiles = Object.values(definition).find((d) => 'fileDescriptorProtos' in d);
  const files = ((withFiles?.fileDescriptorProtos as Buffer[] | undefined) ?? []).map((b) => fromBinary(FileDescriptorProtoSchema, b));
  const messages = new Map<string, DescriptorProto>();
  for (const file of files) for (const message of file.messageType) messages.set(`.${file.package}.${message.name}`, message);
  const shapes = new Map<string, MessageShape>();
  for (const file of files) {
    for (const service of file.service) {
      for (const method of service.method) {
        const message = messages.get(method.inputType);
        if (!message) throw new Error(`${service.name}.${method.name}: request type ${method.inputType} is not a top-level message of ${protoFile}`);
        shapes.set(`/${file.package}.${service.name}/${method.name}`, shapeOf(method.inputType.slice(1), message, messages));
      }
    }
  }
  return shapes;
}

const TRUNCATED = -1;
const OVERLONG = -2;
/** The value of the varint readVarint read last: one number, not an object per varint. */
let varintValue = 0;

/** The position after the varint at `pos`, or TRUNCATED or OVERLONG; its value (exact to 2^53) in varintValue. */
function readVarint(bytes: Uint8Array, pos: number, end: number): number {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (pos >= end) return TRUNCATED;
    const b = bytes[pos++];
    if (i === 9 && b > 1) return OVERLONG; // more than 64 bits
    value += (b & 0x7f) * scale;
    if (b < 0x80) {
      varintValue = value;
      return pos;
    }
    scale *= 128;
  }
  return OVERLONG;
}

/** ASCII in a loop (names and tokens usually are); isUtf8 from the first other byte. A view costs more than the loop. */
function isUtf8From(bytes: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    if (bytes[i] >= 0x80) return isUtf8(bytes.subarray(i, end));
  }
  return true;
}

const MAX_FIELD_NUMBER = 2 ** 29 - 1;
/** Unknown groups may nest; bound them as protobuf bounds recursion. */
const MAX_GROUP_DEPTH = 100;

function malformed(shape: MessageShape, why: string): WireProblem {
  return { kind: 'malformed', message: `request is not a valid ${shape.typeName}: ${why}` };
}

const lost = (shape: MessageShape, pos: number) => malformed(shape, pos === OVERLONG ? 'a varint is longer than 64 bits' : 'it ends inside a field');

/**
 * Walks the bytes of one message once. Undefined when they are well-formed protobuf in which
 * every known field has its declared wire type and every `string` field is valid UTF-8; else
 * what is wrong. Unknown fields are skipped unchecked, as protobuf requires.
 */
export function checkMessageBytes(bytes: Uint8Array, shape: MessageShape): WireProblem | undefined {
  const end = bytes.length;
  let groups: number[] | undefined; // open unknown groups, innermost last; rare, so made on demand
  let pos = 0;
  while (pos < end) {
    pos = readVarint(bytes, pos, end);
    if (pos < 0) return lost(shape, pos);
    const tag = varintValue;
    const fieldNumber = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (fieldNumber === 0 || fieldNumber > MAX_FIELD_NUMBER) return malformed(shape, `field number ${fieldNumber} is out of range`);
    const field = groups?.length ? undefined : shape.fields[fieldNumber]; // a group's fields are not ours
    if (field && wireType !== field.wireType && !(field.packable && wireType === LENGTH_DELIMITED)) {
      return malformed(shape, `${field.name} has wire type ${wireType}, not ${field.wireType}`);
    }
    switch (wireType) {
      case VARINT:
        pos = readVarint(bytes, pos, end);
        if (pos < 0) return lost(shape, pos);
        break;
      case FIXED64:
        pos += 8;
        break;
      case FIXED32:
        pos += 4;
        break;
      case LENGTH_DELIMITED: {
        pos = readVarint(bytes, pos, end);
        if (pos < 0) return lost(shape, pos);
        const start = pos;
        pos += varintValue;
        if (pos <= end && field?.utf8 && !isUtf8From(bytes, start, pos)) {
          return { kind: 'invalid_utf8', message: `${field.name} is not valid UTF-8` };
        }
        if (pos <= end && field?.message) {
          const problem = checkMessageBytes(bytes.subarray(start, pos), field.message);
          if (problem?.kind === 'invalid_utf8') return { kind: 'invalid_utf8', message: `${field.name}.${problem.message}` };
          if (problem) return malformed(shape, `${field.name}: ${problem.message.slice(problem.message.indexOf(': ') + 2)}`);
        }
        break;
      }
      case START_GROUP:
        if ((groups ??= []).push(fieldNumber) > MAX_GROUP_DEPTH) return malformed(shape, 'groups are nested too deep');
        break;
      case END_GROUP:
        if (groups?.pop() !== fieldNumber) return malformed(shape, `an end-group tag for field ${fieldNumber} closes no group`);
        break;
      default:
        return malformed(shape, `wire type ${wireType} does not exist`);
    }
  }
  if (pos > end || groups?.length) return malformed(shape, 'it ends inside a field');
  return undefined;
}

/** What could be read of a streamed request the walk refused: its op_id (field 1) and its first message field. */
export interface StreamedOp {
  /** Decimal, or undefined when field 1 came before the damage, or not at all. */
  opId?: string;
  /** The message field's own shape and bytes, to be checked as its unary request is. */
  op?: { shape: MessageShape; bytes: Uint8Array };
}

/**
 * Reads, leniently, the op_id (a uint64 varint in field 1) and the first message field of a
 * session request whose bytes checkMessageBytes refused, stopping at the first damage: enough to
 * answer that one operation, by its id, with its unary twin's error.
 */
export function streamedOpOf(bytes: Uint8Array, shape: MessageShape): StreamedOp {
  const found: StreamedOp = {};
  const end = bytes.length;
  let pos = 0;
  while (pos < end) {
    pos = readVarint(bytes, pos, end);
    if (pos < 0) break;
    const fieldNumber = Math.floor(varintValue / 8);
    const wireType = varintValue % 8;
    if (wireType === VARINT) {
      const start = pos;
      pos = readVarint(bytes, pos, end);
      if (pos < 0) break;
      if (fieldNumber === 1) found.opId = varintBig(bytes, start, pos).toString();
    } else if (wireType === LENGTH_DELIMITED) {
      pos = readVarint(bytes, pos, end);
      if (pos < 0 || pos + varintValue > end) break;
      const field = shape.fields[fieldNumber];
      if (field?.message && !found.op) found.op = { shape: field.message, bytes: bytes.subarray(pos, pos + varintValue) };
      pos += varintValue;
    } else if (wireType === FIXED64 || wireType === FIXED32) {
      pos += wireType === FIXED64 ? 8 : 4;
    } else {
      break;
    }
  }
  return found;
}

/** A varint read whole, as a bigint: a uint64 op_id may pass 2^53. */
function varintBig(bytes: Uint8Array, start: number, end: number): bigint {
  let value = 0n;
  for (let i = end - 1; i >= start; i--) value = (value << 7n) | BigInt(bytes[i] & 0x7f);
  return value;
}
