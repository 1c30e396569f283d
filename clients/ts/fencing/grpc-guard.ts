// The resource side over gRPC: a grpc-js server interceptor that checks every call's fence before
// its handler sees it. An interceptor can refuse cleanly: its metadata listener holds the call
// (messages wait) until the fence is judged, then either lets the call go on or ends it with a
// status. The call's next steps (metadata, each message, the half-close: grpc-js starts a handler
// at one of them) run inside the admitted fence's AsyncLocalStorage, so currentFence() works in
// the handler, unary or streaming, as it does behind the HTTP guard.
import { type Metadata, ResponderBuilder, ServerInterceptingCall, ServerListenerBuilder, status, type ServerInterceptor } from '@grpc/grpc-js';
import { readUnsigned, receivedValues, withAdmittedFence, type AdmittedFence, type FenceValues } from './admit';
import { judge, LOCK_RULE_FAILED, type GuardOptions } from './judge';
import { FenceRefusal } from './refusal';
import type { FenceStore } from './store';
import { FENCE_METADATA, type Fence } from './wire';

export interface GrpcFenceGuardOptions extends GuardOptions<[methodPath: string, metadata: Metadata]> {
  /** Which methods to guard (full path, e.g. "/shop.Orders/Put"); default: all. */
  guards?: (methodPath: string) => boolean;
}

/** The three fence keys' values in gRPC metadata (a key sent twice has two values). */
export function fenceValuesOfMetadata(metadata: Metadata): FenceValues {
  const all = (key: string) => receivedValues(metadata.get(key).map(String));
  return { fence: all(FENCE_METADATA.fence), lock: all(FENCE_METADATA.lock), token: all(FENCE_METADATA.token) };
}

/** Reads the unsigned fence from gRPC metadata; throws FenceError naming the key at fault. */
export function fenceFromMetadata(metadata: Metadata): Fence {
  return readUnsigned(fenceValuesOfMetadata(metadata), FENCE_METADATA);
}

/**
 * A server interceptor (pass it in `new Server({ interceptors: [...] })`): refuses a call with the
 * status clients/conformance/signed-fence.md orders (INVALID_ARGUMENT, PERMISSION_DENIED,
 * FAILED_PRECONDITION, UNAVAILABLE) and its message; the rest go on, their token recorded as the
 * newest for their lock, their handler reading the fence with currentFence().
 */
export function grpcFenceGuard(store: FenceStore, options: GrpcFenceGuardOptions = {}): ServerInterceptor {
  const check = judge(store, options, FENCE_METADATA, 'grpcFenceGuard');
  return (method, call) => {
    if (options.guards && !options.guards(method.path)) return new ServerInterceptingCall(call);
    let fence: AdmittedFence | undefined;
    const inFence = (next: () => void) => (fence ? withAdmittedFence(fence, next) : next());
    const listener = new ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        check(fenceValuesOfMetadata(metadata), [method.path, metadata]).then(
          (admitted) => {
            fence = admitted;
            inFence(() => next(metadata));
          },
          (err) => {
            if (err instanceof FenceRefusal) call.sendStatus({ code: err.grpcCode, details: err.message });
            else call.sendStatus({ code: status.INTERNAL, details: LOCK_RULE_FAILED });
          },
        );
      })
      .withOnReceiveMessage((message, next) => inFence(() => next(message)))
      .withOnReceiveHalfClose((next) => inFence(() => next()))
      .build();
    return new ServerInterceptingCall(call, new ResponderBuilder().withStart((next) => next(listener)).build());
  };
}
