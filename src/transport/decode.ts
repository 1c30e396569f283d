// Requests whose bytes are not a valid message of their type (undecodable, or a string field
// that is not UTF-8) are answered INVALID_ARGUMENT here, before any handler runs. grpc-js would
// answer a throwing deserializer with INTERNAL and log nothing, so the deserializer never throws:
// it hands a BadRequest to the handler wrapper below, which answers it and reports it once.
import {
  status,
  type MethodDefinition,
  type sendUnaryData,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceDefinition,
  type UntypedHandleCall,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { serviceError } from './status';
import { checkMessageBytes, streamedOpOf, type MessageShape, type WireProblem } from './wire';

/** A call refused before its handler, as reported to onRejected: never its bytes (they may hold a token). */
export interface Rejection {
  /** gRPC path: /holdfast.v1.LockService/Acquire. */
  method: string;
  kind: WireProblem['kind'];
  /** The status details sent: names the field or the message type. */
  problem: string;
  peer: string;
}

export interface GuardOptions {
  /** From readRequestShapes: the request message of each method, by path. */
  shapes: Map<string, MessageShape>;
  /** Called once per refused call. */
  onRejected(rejection: Rejection): void;
}

/**
 * Stands in for a request that could not be decoded; only guardRequests' handlers see it, and
 * a request stream's handler (through rejectedOp). `opProblem`: for a streamed request, what its
 * one operation's unary twin would be refused for.
 */
class BadRequest {
  constructor(
    readonly problem: WireProblem,
    readonly opId?: string,
    readonly opProblem?: WireProblem,
  ) {}
}

/** A streamed request that could not be decoded: its op_id (when readable) and the INVALID_ARGUMENT message for it. */
export interface RejectedOp {
  opId?: string;
  message: string;
}

/** For a request-stream handler: the message's refusal, or undefined for a good message. */
export function rejectedOp(message: unknown): RejectedOp | undefined {
  if (!(message instanceof BadRequest)) return undefined;
  return { opId: message.opId, message: (message.opProblem ?? message.problem).message };
}

function badStreamedRequest(bytes: Buffer, shape: MessageShape, problem: WireProblem): BadRequest {
  const { opId, op } = streamedOpOf(bytes, shape);
  const opProblem = op && checkMessageBytes(op.bytes, op.shape);
  return new BadRequest(problem, opId, opProblem);
}

function checkedDeserializer(method: MethodDefinition<unknown, unknown>, shape: MessageShape) {
  const decode = method.requestDeserialize;
  return (bytes: Buffer): unknown => {
    const problem = checkMessageBytes(bytes, shape);
    if (problem) return method.requestStream ? badStreamedRequest(bytes, shape, problem) : new BadRequest(problem);
    try {
      return decode(bytes);
    } catch {
      return new BadRequest({ kind: 'malformed', message: `request is not a valid ${shape.typeName}` });
    }
  };
}

function guardedHandler(method: MethodDefinition<unknown, unknown>, handler: UntypedHandleCall, onRejected: GuardOptions['onRejected']): UntypedHandleCall {
  const refuse = (call: { getPeer(): string }, bad: BadRequest) => {
    onRejected({ method: method.path, kind: bad.problem.kind, problem: bad.problem.message, peer: call.getPeer() });
    return serviceError(status.INVALID_ARGUMENT, bad.problem.message);
  };
  if (method.requestStream && !method.responseStream) throw new Error(`${method.path}: guardRequests does not handle client streams`);
  if (method.requestStream) {
    // Each bad message is one operation's: the handler answers it (rejectedOp); it is reported here.
    const handle = handler as (call: ServerDuplexStream<unknown, unknown>) => void;
    return (call: ServerDuplexStream<unknown, unknown>) => {
      call.on('data', (message: unknown) => {
        if (message instanceof BadRequest)
          onRejected({ method: method.path, kind: message.problem.kind, problem: message.problem.message, peer: call.getPeer() });
      });
      handle(call);
    };
  }
  if (method.responseStream) {
    const handle = handler as (call: ServerWritableStream<unknown, unknown>) => void;
    return (call: ServerWritableStream<unknown, unknown>) => {
      if (call.request instanceof BadRequest) call.emit('error', refuse(call, call.request));
      else handle(call);
    };
  }
  const handle = handler as (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => void;
  return (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
    if (call.request instanceof BadRequest) callback(refuse(call, call.request));
    else handle(call, callback);
  };
}

/**
 * The service definition and implementation to register with grpc-js, such that every request of
 * every method is checked against its message's shape before its handler runs.
 */
export function guardRequests(
  service: ServiceDefinition,
  implementation: UntypedServiceImplementation,
  options: GuardOptions,
): { service: ServiceDefinition; implementation: UntypedServiceImplementation } {
  const guardedService: Record<string, MethodDefinition<unknown, unknown>> = {};
  const guardedImplementation: UntypedServiceImplementation = {};
  for (const [key, method] of Object.entries(service)) {
    const shape = options.shapes.get(method.path);
    if (!shape) throw new Error(`${method.path} is not in the .proto the request shapes were read from`);
    // As grpc-js does: a handler may be keyed by the method's original (lower camel case) name.
    const handler = implementation[key] ?? implementation[method.originalName ?? key];
    guardedService[key] = { ...method, requestDeserialize: checkedDeserializer(method, shape) };
    guardedImplementation[key] = guardedHandler(method, handler, options.onRejected);
  }
  return { service: guardedService, implementation: guardedImplementation };
}
