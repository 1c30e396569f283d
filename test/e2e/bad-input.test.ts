// Requests whose bytes are not a valid message, sent as raw protobuf over a real gRPC channel to a
// real server: each is refused with INVALID_ARGUMENT naming the field or the message type, never
// INTERNAL, nothing reaches Redis, and the server stays healthy.
import { credentials, makeGenericClientConstructor, status, type Client, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcquireResponse, LockServiceService } from '../../gen/holdfast/v1/lock';
import type { TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import type { ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';
import { NOT_UTF8, bytesField, message, randomBytes, tag, varintField } from '../support/wire-bytes';

const env = useServers(1, ['--log-level', 'debug']);
let server: ServerProcess;
let client: TestClient;
let raw: Client;

// Session (a request stream) has its own bad-input cases: test/e2e/session-bad-input.test.ts.
type Method = Exclude<keyof typeof LockServiceService, 'session'>;
type Outcome = { code: number; details: string; response?: Buffer };

// The generated service with identity (de)serializers: requests go out exactly as written.
const identity = (b: Buffer) => b;
const RawLockService = makeGenericClientConstructor(
  Object.fromEntries(Object.entries(LockServiceService).map(([k, m]) => [k, { ...m, requestSerialize: identity, responseDeserialize: identity }])),
  'LockService',
);

function send(method: Method, body: Buffer): Promise<Outcome> {
  const fn = (raw as unknown as Record<Method, (...args: unknown[]) => unknown>)[method].bind(raw);
  if (method !== 'hold' && method !== 'watch' && method !== 'holdSet') {
    return new Promise((resolve) =>
      fn(body, (err: ServiceError | null, response: Buffer) =>
        resolve(err ? { code: err.code, details: err.details } : { code: status.OK, details: '', response }),
      ),
    );
  }
  const stream = fn(body) as ClientReadableStream<Buffer>;
  return new Promise((resolve) => {
    stream.on('data', (response: Buffer) => {
      resolve({ code: status.OK, details: 'streaming', response });
      stream.cancel();
    });
    stream.on('error', (err: ServiceError) => resolve({ code: err.code, details: err.details }));
    stream.on('status', (s) => resolve({ code: s.code, details: s.details }));
  });
}

beforeAll(() => {
  [server, client] = [env.servers[0], env.clients[0]];
  raw = new RawLockService(server.addr, credentials.createInsecure());
});
afterAll(() => raw?.close());

/** Each request message with valid values in every string field, by proto field name and number. */
const TOKEN = 'c2VjcmV0LXRva2VuLXZhbHVl';
const REQUESTS: Record<Method, { type: string; fields: Record<string, [number, string]>; more?: Buffer }> = {
  acquire: { type: 'AcquireRequest', fields: { name: [1, 'n'], owner: [2, 'worker'], request_id: [7, 'req-0123456789abcdef'], value: [8, 'host:1'] } },
  release: { type: 'ReleaseRequest', fields: { name: [1, 'n'], token: [2, TOKEN], hold_id: [3, 'hold-1'] } },
  renew: { type: 'RenewRequest', fields: { name: [1, 'n'], token: [2, TOKEN] } },
  hold: { type: 'HoldRequest', fields: { name: [1, 'n'], owner: [2, 'worker'], value: [9, 'host:1'] } },
  inspect: { type: 'InspectRequest', fields: { name: [1, 'n'] } },
  checkFencingToken: { type: 'CheckFencingTokenRequest', fields: { name: [1, 'n'] }, more: varintField(2, 1) },
  setValue: { type: 'SetValueRequest', fields: { name: [1, 'n'], token: [2, TOKEN], value: [3, 'host:1'] } },
  watch: { type: 'WatchRequest', fields: { name: [1, 'n'] } },
  acquireSet: { type: 'AcquireSetRequest', fields: { names: [1, 'n'], owner: [2, 'worker'], value: [6, 'host:1'] } },
  releaseSet: { type: 'ReleaseSetRequest', fields: {}, more: bytesField(1, message(bytesField(1, 'n'), bytesField(2, TOKEN))) },
  holdSet: { type: 'HoldSetRequest', fields: { names: [1, 'n'], owner: [2, 'worker'], value: [7, 'host:1'] } },
};
const METHODS = Object.keys(REQUESTS) as Method[];

/** The method's request, with `name` set to `name` and `bad` (raw bytes) in field `badField`. */
function requestWith(method: Method, name: string, badField?: string, bad?: Buffer): Buffer {
  const { fields, more } = REQUESTS[method];
  const parts = Object.entries(fields).map(([field, [number, value]]) => bytesField(number, field === badField ? bad! : field === 'name' ? name : value));
  return message(...parts, more ?? Buffer.alloc(0));
}

describe('string fields must be UTF-8', () => {
  it('checks strings inside submessages too: ReleaseSet members.name', async () => {
    const member = message(bytesField(1, NOT_UTF8['encoded surrogate']), bytesField(2, TOKEN));
    expect(await send('releaseSet', bytesField(1, member))).toEqual({ code: status.INVALID_ARGUMENT, details: 'members.name is not valid UTF-8' });
  });

  const cases = METHODS.flatMap((m) => Object.keys(REQUESTS[m].fields).map((f) => [m, f] as const));

  it.each(cases)('%s: invalid UTF-8 in %s is INVALID_ARGUMENT naming the field', async (method, field) => {
    for (const [what, bad] of Object.entries(NOT_UTF8)) {
      const outcome = await send(method, requestWith(method, uniqueName(), field, bad));
      expect(outcome, what).toEqual({ code: status.INVALID_ARGUMENT, details: `${field} is not valid UTF-8` });
    }
  });

  it('a refused Acquire or Hold leaves no trace of the lock: nothing reached Redis', async () => {
    for (const method of ['acquire', 'hold'] as const) {
      const name = uniqueName();
      expect((await send(method, requestWith(method, name, 'owner', NOT_UTF8['byte 0xff']))).code).toBe(status.INVALID_ARGUMENT);
      expect(await client.inspect({ name })).toMatchObject({ holders: [], waiters: 0, fencingToken: '0' });
    }
  });

  it('a valid U+FFFD in a name is a name like any other, distinct from the bytes it would replace', async () => {
    const stem = uniqueName();
    const name = Buffer.concat([Buffer.from(stem), Buffer.from([0xef, 0xbf, 0xbd])]);
    const granted = await send('acquire', message(bytesField(1, name), bytesField(2, 'worker')));
    expect(granted.code).toBe(status.OK);
    const grant = AcquireResponse.decode(granted.response!);
    expect(grant.acquired).toBe(true);
    expect((await client.inspect({ name: `${stem}\ufffd` })).holders).toMatchObject([{ owner: 'worker' }]);
    // The bytes a lenient decoder would turn into this same name are refused, not given the same lock.
    const aliased = await send('acquire', message(bytesField(1, Buffer.concat([Buffer.from(stem), Buffer.from([0xff])]))));
    expect(aliased).toEqual({ code: status.INVALID_ARGUMENT, details: 'name is not valid UTF-8' });
    expect(await client.release({ name: `${stem}\ufffd`, token: grant.token })).toMatchObject({ released: true });
  });

  it('logs one debug line per refused call, with the method and the field, never the token', async () => {
    const refusals = () => server.logs.filter((l) => l.includes('refused a request'));
    const before = refusals().length;
    const outcome = await send('release', requestWith('release', uniqueName(), 'hold_id', NOT_UTF8['encoded surrogate']));
    expect(outcome.code).toBe(status.INVALID_ARGUMENT);
    await waitFor('the refusal logged', () => refusals().length > before);
    const lines = refusals().slice(before);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({
      level: 20,
      method: '/holdfast.v1.LockService/Release',
      kind: 'invalid_utf8',
      problem: 'hold_id is not valid UTF-8',
      peer: expect.stringContaining('127.0.0.1'),
    });
    expect(server.logs.join('\n')).not.toContain(TOKEN);
  });
});

describe('bodies that are not a valid message', () => {
  const BODIES: Record<string, Buffer> = {
    'truncated inside a string': bytesField(1, 'orders/42').subarray(0, 6),
    'length flipped past the end': Buffer.from([0x0a, 0x7f, 0x61, 0x62]),
    'a string field sent as a varint': varintField(1, 5),
    'an unknown field with an 11-byte varint': message(tag(15, 0), Buffer.alloc(10, 0xff), Buffer.from([0x01])),
    'field number 0': message(bytesField(1, 'n'), Buffer.from([0x00, 0x00])),
    'wire type 7': tag(1, 7),
    'an end-group that closes nothing': tag(9, 4),
  };
  const cases = METHODS.flatMap((m) => Object.keys(BODIES).map((b) => [m, b] as const));

  it.each(cases)('%s: %s is INVALID_ARGUMENT naming the message type', async (method, body) => {
    const outcome = await send(method, BODIES[body]);
    expect(outcome.code).toBe(status.INVALID_ARGUMENT);
    expect(outcome.details).toMatch(new RegExp(`^request is not a valid holdfast\\.v1\\.${REQUESTS[method].type}: `));
  });

  it.each(METHODS)('%s: random bytes are INVALID_ARGUMENT, never INTERNAL', async (method) => {
    for (let seed = 1; seed <= 20; seed++) {
      const outcome = await send(method, randomBytes(seed * 7919, 8 + seed * 3));
      expect(outcome.code, `seed ${seed * 7919}: ${outcome.details}`).toBe(status.INVALID_ARGUMENT);
    }
  });

  it('field checks still apply to requests that decode: an empty name, a control character', async () => {
    expect(await send('acquire', bytesField(2, 'worker'))).toEqual({ code: status.INVALID_ARGUMENT, details: 'name is required' });
    expect(await send('hold', bytesField(1, 'tab\there'))).toEqual({ code: status.INVALID_ARGUMENT, details: 'name must not contain control characters' });
    expect(await send('release', bytesField(1, 'n'))).toEqual({ code: status.INVALID_ARGUMENT, details: 'token is required' });
  });

  it('leaves the server healthy: Acquire and Release work, health says SERVING', async () => {
    const name = uniqueName();
    const grant = await client.acquire({ name });
    expect(grant.acquired).toBe(true);
    expect(await client.release({ name, token: grant.token })).toMatchObject({ released: true });
    const Health = makeGenericClientConstructor(healthService, 'Health');
    const health = new Health(server.addr, credentials.createInsecure());
    const reply = await new Promise<{ status: string }>((resolve, reject) =>
      (health as unknown as { check(r: object, cb: (e: Error | null, r: { status: string }) => void): void }).check(
        { service: 'holdfast.v1.LockService' },
        (e, r) => (e ? reject(e) : resolve(r)),
      ),
    ).finally(() => health.close());
    expect(reply.status).toBe('SERVING');
    expect(server.process.exitCode).toBeNull();
  });
});
