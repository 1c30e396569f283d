// The grpcurl walk-through of docs/sessions.md, sent as grpcurl sends it: each JSON line turned
// into a SessionRequest by protobuf's JSON mapping (here @bufbuild/protobuf, from the served
// .proto), over a real Session stream, the answers read back as JSON. grpcurl itself is not in
// Debian; this keeps the page's lines true to the contract and the server.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { create, createFileRegistry, fromBinary, fromJson, toBinary, toJson, type DescMessage, type JsonValue } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import { credentials, makeGenericClientConstructor, status, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockServiceService } from '../../gen/holdfast/v1/lock';
import type { TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { ROOT } from '../support/paths';

const env = useServers(1);
let peer: TestClient;
beforeAll(() => void (peer = env.clients[0]));

const identity = (b: Buffer) => b;
const Raw = makeGenericClientConstructor(
  { session: { ...LockServiceService.session, requestSerialize: identity, responseDeserialize: identity } },
  'LockService',
);
let raw: InstanceType<typeof Raw>;
beforeAll(() => void (raw = new Raw(env.servers[0].addr, credentials.createInsecure())));
afterAll(() => raw?.close());

function schemas(): { request: DescMessage; response: DescMessage } {
  const definition = loadSync('holdfast/v1/lock.proto', { keepCase: true, includeDirs: [join(ROOT, 'proto')] });
  const withFiles = Object.values(definition).find((d) => 'fileDescriptorProtos' in d) as { fileDescriptorProtos: Buffer[] };
  const file = withFiles.fileDescriptorProtos.map((b) => fromBinary(FileDescriptorProtoSchema, b));
  // proto-loader names types relative to the package and leaves JSON names empty; a registry wants both as protoc writes them.
  for (const f of file) {
    for (const field of f.messageType.flatMap((m) => m.field)) {
      if (field.typeName && !field.typeName.startsWith('.')) field.typeName = `.${f.package}.${field.typeName}`;
      field.jsonName = field.name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    }
  }
  const registry = createFileRegistry(create(FileDescriptorSetSchema, { file }));
  return { request: registry.getMessage('holdfast.v1.SessionRequest')!, response: registry.getMessage('holdfast.v1.SessionResponse')! };
}

/** The JSON lines of the walk-through: the block after its marker comment. */
function walkthrough(): string[] {
  const page = readFileSync(join(ROOT, 'docs/sessions.md'), 'utf8');
  const after = page.slice(page.indexOf('<!-- session-walkthrough'));
  const block = /```json\n([\s\S]*?)```/.exec(after)![1];
  return block.trim().split('\n');
}

type Json = Record<string, unknown>;

function jsonSession(request: DescMessage, response: DescMessage) {
  const call = (raw as unknown as { session(): ClientDuplexStream<Buffer, Buffer> }).session();
  const answers: Json[] = [];
  const waiting = new Set<() => void>();
  call.on('data', (bytes: Buffer) => {
    answers.push(toJson(response, fromBinary(response, bytes)) as Json);
    for (const check of [...waiting]) check();
  });
  const ended = new Promise<number>((resolve) => {
    call.on('error', (err: ServiceError) => resolve(err.code));
    call.on('status', (s) => s.code === 0 && resolve(0));
  });
  const answerTo = (opId: string) =>
    new Promise<Json>((resolve) => {
      const check = () => {
        const found = answers.find((a) => a.opId === opId && !a.renewed);
        if (found) {
          waiting.delete(check);
          resolve(found);
        }
      };
      waiting.add(check);
      check();
    });
  const send = (line: string) => {
    call.write(Buffer.from(toBinary(request, fromJson(request, JSON.parse(line) as JsonValue))));
    return answerTo(String((JSON.parse(line) as Json).op_id));
  };
  return { call, send, ended, answers };
}

describe('the grpcurl walk-through of docs/sessions.md', () => {
  it('runs as the page says', async () => {
    const { request, response } = schemas();
    const lines = walkthrough();
    expect(lines).toHaveLength(5);
    const s = jsonSession(request, response);
    expect(((await s.send(lines[0])).hold as Json).holdId).toMatch(/^[\w-]{12}$/);
    const acquired = (await s.send(lines[1])).acquire as Json;
    expect(acquired.acquired).toBe(true);
    expect((await s.send(lines[2])).inspect).toMatchObject({ name: 'jobs/nightly', holders: [{ owner: 'me' }] });
    expect((await s.send(lines[3].replace("PASTE op 2's token", acquired.token as string))).release).toMatchObject({ released: true });
    // A bad line gets its error, as the page says, and the session goes on.
    expect((await s.send('{"op_id": "6", "inspect": {"name": ""}}')).error).toEqual({ code: 3, message: 'name is required' });
    s.call.write(Buffer.from(toBinary(request, fromJson(request, JSON.parse(lines[4]) as JsonValue))));
    expect(await s.ended).toBe(status.OK);
    expect((await peer.inspect({ name: 'jobs/nightly' })).holders).toEqual([]);
  });
});
