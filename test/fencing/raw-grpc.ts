// A small gRPC service with raw bytes for messages: enough to put the guard in front of a real
// grpc-js server and call it through a real channel. Put is unary; Watch (server streaming) and
// Upload (client streaming) show that the admitted fence reaches streaming handlers too.
import {
  credentials,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type Client,
  type ClientReadableStream,
  type ClientWritableStream,
  type Metadata,
  type ServerInterceptor,
  type ServerReadableStream,
  type ServerWritableStream,
  type ServiceError,
} from '@grpc/grpc-js';
import { type AdmittedFence, currentFence } from '../../clients/ts/fencing';

const bytes = { serialize: (b: Buffer) => b, deserialize: (b: Buffer) => b };
const method = (name: string, requestStream: boolean, responseStream: boolean) => ({
  path: `/fencetest.Storage/${name}`,
  requestStream,
  responseStream,
  requestSerialize: bytes.serialize,
  requestDeserialize: bytes.deserialize,
  responseSerialize: bytes.serialize,
  responseDeserialize: bytes.deserialize,
});
const SERVICE = { Put: method('Put', false, false), Watch: method('Watch', false, true), Upload: method('Upload', true, false) };

export type CallResult = { ok: true } | { ok: false; code: number; details: string };

export interface RawGrpc {
  /** Values the handlers stored, in order: the guard let them through. */
  stored: string[];
  /** What currentFence() gave each handler that ran, after one turn of the event loop: [method, fence]. */
  seen: [string, AdmittedFence | undefined][];
  put(value: string, metadata: Metadata): Promise<CallResult>;
  /** Server streaming: the handler answers with one message. */
  watch(value: string, metadata: Metadata): Promise<CallResult>;
  /** Client streaming: the handler reads `values`, then answers. */
  upload(values: string[], metadata: Metadata): Promise<CallResult>;
  stop(): Promise<void>;
}

const later = () => new Promise((resolve) => setImmediate(resolve));

export async function startRawGrpc(interceptors: ServerInterceptor[]): Promise<RawGrpc> {
  const stored: string[] = [];
  const seen: RawGrpc['seen'] = [];
  const server = new Server({ interceptors });
  server.addService(SERVICE, {
    Put: async (call: { request: Buffer }, done: (err: null, res: Buffer) => void) => {
      await later();
      seen.push(['Put', currentFence()]);
      stored.push(call.request.toString());
      done(null, Buffer.from('ok'));
    },
    Watch: async (call: ServerWritableStream<Buffer, Buffer>) => {
      await later();
      seen.push(['Watch', currentFence()]);
      stored.push(call.request.toString());
      call.write(Buffer.from('ok'));
      call.end();
    },
    Upload: (call: ServerReadableStream<Buffer, Buffer>, done: (err: null, res: Buffer) => void) => {
      call.on('data', (chunk: Buffer) => {
        seen.push(['Upload', currentFence()]);
        stored.push(chunk.toString());
      });
      call.on('end', () => done(null, Buffer.from('ok')));
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const Ctor = makeGenericClientConstructor(SERVICE, 'Storage');
  const client = new Ctor(`127.0.0.1:${port}`, credentials.createInsecure()) as unknown as Client & {
    Put(value: Buffer, metadata: Metadata, done: (err: ServiceError | null) => void): void;
    Watch(value: Buffer, metadata: Metadata): ClientReadableStream<Buffer>;
    Upload(metadata: Metadata, done: (err: ServiceError | null) => void): ClientWritableStream<Buffer>;
  };
  const result = (err: ServiceError | null): CallResult => (err ? { ok: false, code: err.code, details: err.details } : { ok: true });
  return {
    stored,
    seen,
    put: (value, metadata) => new Promise((resolve) => client.Put(Buffer.from(value), metadata, (err) => resolve(result(err)))),
    watch: (value, metadata) =>
      new Promise((resolve) => {
        const stream = client.Watch(Buffer.from(value), metadata);
        stream.on('data', () => {});
        stream.on('error', (err: ServiceError) => resolve(result(err)));
        stream.on('end', () => resolve(result(null)));
      }),
    upload: (values, metadata) =>
      new Promise((resolve) => {
        const stream = client.Upload(metadata, (err) => resolve(result(err)));
        for (const v of values) stream.write(Buffer.from(v));
        stream.end();
      }),
    async stop() {
      client.close();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    },
  };
}
