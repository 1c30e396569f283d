// Protobuf messages written byte by byte, so tests can send what no encoder would produce:
// invalid UTF-8, truncations, wrong wire types, over-long varints. Plus seeded random bytes.

/** A varint of `value` (a bigint for 64-bit values), optionally padded with `extra` redundant 0x80 bytes. */
export function varint(value: number | bigint, extra = 0): Buffer {
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    out.push(Number(v & 0x7fn) | 0x80); // continuation bit on every byte; cleared on the last below
    v >>= 7n;
  } while (v > 0n);
  for (let i = 0; i < extra; i++) out.push(0x80);
  out[out.length - 1] &= 0x7f;
  return Buffer.from(out);
}

export const tag = (field: number, wireType: number): Buffer => varint(field * 8 + wireType);

/** A length-delimited field: a string's bytes, valid UTF-8 or not. */
export function bytesField(field: number, value: Buffer | string): Buffer {
  const payload = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  return Buffer.concat([tag(field, 2), varint(payload.length), payload]);
}

export const varintField = (field: number, value: number | bigint): Buffer => Buffer.concat([tag(field, 0), varint(value)]);

export const message = (...fields: Buffer[]): Buffer => Buffer.concat(fields);

/** Deterministic bytes (xorshift32 from `seed`), so a failure names the input that caused it. */
export function randomBytes(seed: number, length: number): Buffer {
  let x = seed >>> 0 || 1;
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/** Byte sequences that are not UTF-8: a lone 0xff, an over-long "/", a UTF-16 surrogate, a cut-off euro sign. */
export const NOT_UTF8: Record<string, Buffer> = {
  'byte 0xff': Buffer.from([0x61, 0xff, 0x62]),
  'over-long encoding': Buffer.from([0x61, 0xc0, 0xaf]),
  'encoded surrogate': Buffer.from([0xed, 0xa0, 0x80]),
  'truncated sequence': Buffer.from([0x61, 0xe2, 0x82]),
};
