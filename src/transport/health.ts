// grpc.health.v1.Health as grpc-health-check serves it, behind two guards. Its requests are
// checked like ours (decode.ts): grpc-js alone answers bytes that are not a message with
// INTERNAL. And a service name longer than any health reports on is refused: grpc-health-check
// echoes the name into grpc-message, and a trailer of about 128 KiB never reaches the client
// (the call hangs) or makes the client's HTTP/2 layer drop its whole connection, with every other
// call on it (GOAWAY COMPRESSION_ERROR). Found by test/fuzz.
import { status, type sendUnaryData, type Server, type UntypedHandleCall } from '@grpc/grpc-js';
import type { ServerSurfaceCall } from '@grpc/grpc-js/build/src/server-call';
import type { HealthImplementation } from 'grpc-health-check';
import { guardRequests, type GuardOptions } from './decode';
import { serviceError } from './status';

/** Longer than any service name a server reports health for. */
const MAX_SERVICE_BYTES = 512;

type AnyCall = ServerSurfaceCall & { request?: { service?: unknown } };

function boundServiceName(handler: UntypedHandleCall): UntypedHandleCall {
  const handle = handler as (call: AnyCall, callback?: sendUnaryData<unknown>) => void;
  return ((call: AnyCall, callback?: sendUnaryData<unknown>) => {
    const service = call.request?.service;
    const bytes = typeof service === 'string' ? Buffer.byteLength(service) : 0;
    if (bytes <= MAX_SERVICE_BYTES) return handle(call, callback);
    const refusal = serviceError(status.INVALID_ARGUMENT, `service is ${bytes} bytes; at most ${MAX_SERVICE_BYTES} are allowed`);
    if (callback) callback(refusal);
    else call.emit('error', refusal);
  }) as UntypedHandleCall;
}

/** Adds `health` to `server` with its requests checked and its service names bounded. */
export function addHealthService(server: Server, health: HealthImplementation, options: GuardOptions): void {
  // grpc-health-check registers itself: stand in for the server to see what it adds.
  const registrar = {
    addService(service: Parameters<Server['addService']>[0], implementation: Parameters<Server['addService']>[1]) {
      const bounded = Object.fromEntries(Object.entries(implementation).map(([key, handler]) => [key, boundServiceName(handler)]));
      const guarded = guardRequests(service, bounded, options);
      server.addService(guarded.service, guarded.implementation);
    },
  };
  health.addToServer(registrar as unknown as Server);
}
