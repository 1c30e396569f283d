// A one-method gRPC service with raw bytes for messages: enough to put the guard in front of a
// real grpc-js server and call it through a real channel.
import {
  credentials,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type Client,
  type Metadata,
  type ServerInterceptor,
  type ServiceError,
} from '@grpc/grpc-js';

const bytes = { serialize: (b: Buffer) => b, deserialize: (b: Buffer) => b };
const SERVICE = {
  Put: {
    path: '/fencetest.Storage/Put',
    requestStream: false,
    responseStream: false,
    requestSerialize: bytes.serialize,
    requestDeserialize: bytes.deserialize,
    responseSerialize: bytes.serialize,
    responseDeserialize: bytes.deserialize,
  },
};

export interface RawGrpc {
  /** Values the handler stored, in order: the guard let them through. */
  stored: string[];
  put(value: string, metadata: Metadata): Promise<{ ok: true } | { ok: false; code: number; details: string }>;
  stop(): Promise<void>;
}

export async function startRawGrpc(interceptors: ServerInterceptor[]): Promise<RawGrpc> {
  const stored: string[] = [];
  const server = new Server({ interceptors });
  server.addService(SERVICE, {
    Put: (call: { request: Buffer }, done: (err: null, res: Buffer) => void) => {
      stored.push(call.request.toString());
      done(null, Buffer.from('ok'));
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const Ctor = makeGenericClientConstructor(SERVICE, 'Storage');
  const client = new Ctor(`127.0.0.1:${port}`, credentials.createInsecure()) as unknown as Client & {
    Put(value: Buffer, metadata: Metadata, done: (err: ServiceError | null) => void): void;
  };
  return {
    stored,
    put: (value, metadata) =>
      new Promise((resolve) =>
        client.Put(Buffer.from(value), metadata, (err: ServiceError | null) =>
          resolve(err ? { ok: false, code: err.code, details: err.details } : { ok: true }),
        ),
      ),
    async stop() {
      client.close();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    },
  };
}
