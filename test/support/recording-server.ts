// A gRPC server (in this process, on a free loopback port) that answers every LockService call
// with PERMISSION_DENIED after noting what the client sent with it: its `authorization`
// metadata and its verified client certificate's subject. For checking what clients send.
import {
  Metadata,
  Server,
  ServerCredentials,
  status,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceError,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { LockServiceService } from '../../gen/holdfast/v1/lock';
import { clientCertificateSubject, type ClientCertificateSubject } from '../../src/tls/peer';

export interface RecordedCall {
  method: string;
  authorization: string[];
  subject?: ClientCertificateSubject;
}

export interface RecordingServer {
  addr: string;
  port: number;
  calls: RecordedCall[];
  stop(): void;
}

const DENIED = 'recorded by the test server';

/** `without` names methods left unimplemented (grpc-js answers them UNIMPLEMENTED, as a server older than them does). */
export async function startRecordingServer(credentials = ServerCredentials.createInsecure(), without: string[] = []): Promise<RecordingServer> {
  const calls: RecordedCall[] = [];
  const denied = (): ServiceError => Object.assign(new Error(DENIED), { code: status.PERMISSION_DENIED, details: DENIED, metadata: new Metadata() });
  const record = (method: string, call: ServerUnaryCall<unknown, unknown>) =>
    calls.push({ method, authorization: call.metadata.get('authorization').map(String), subject: clientCertificateSubject(call) });
  const implementation: UntypedServiceImplementation = Object.fromEntries(
    Object.entries(LockServiceService)
      .filter(([name]) => !without.includes(name))
      .map(([name, definition]) => [
        name,
        definition.responseStream
          ? (call: ServerWritableStream<unknown, unknown>) => {
              record(name, call);
              call.emit('error', denied());
            }
          : (call: ServerUnaryCall<unknown, unknown>, callback: (err: ServiceError) => void) => {
              record(name, call);
              callback(denied());
            },
      ]),
  );
  const server = new Server();
  server.addService(LockServiceService, implementation);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', credentials, (err, p) => (err ? reject(err) : resolve(p))));
  return { addr: `127.0.0.1:${port}`, port, calls, stop: () => server.forceShutdown() };
}
