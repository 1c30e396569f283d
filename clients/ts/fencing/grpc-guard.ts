// The resource side over gRPC: a grpc-js server interceptor that checks every call's fence before
// its handler sees it. An interceptor can refuse cleanly: its metadata listener holds the call
// (messages wait) until the store answers, then either lets the call go on or ends it with a status.
import { type Metadata, ResponderBuilder, ServerInterceptingCall, ServerListenerBuilder, status, type ServerInterceptor } from '@grpc/grpc-js';
import type { Refusal } from './refusal';
import { STORE_FAILED_MESSAGE, staleMessage } from './refusal';
import type { FenceStore } from './store';
import { decodeFence, FENCE_METADATA, FenceError, type Fence } from './wire';

export interface GrpcFenceGuardOptions {
  /** Which methods to guard (full path, e.g. "/shop.Orders/Put"); default: all. */
  guards?: (methodPath: string) => boolean;
  /** Called for every stale request refused (to report a holder that lost its lock). */
  onRefused?: (refusal: Refusal) => void;
}

/** Reads the fence from gRPC metadata; throws FenceError naming the key at fault. */
export function fenceFromMetadata(metadata: Metadata): Fence {
  const one = (key: string): string | undefined => {
    const values = metadata.get(key);
    if (values.length > 1) throw new FenceError('malformed', key === FENCE_METADATA.lock ? 'lock' : 'token', key, 'must be sent once');
    return values.length === 0 ? undefined : values[0].toString();
  };
  return decodeFence({ lock: one(FENCE_METADATA.lock), token: one(FENCE_METADATA.token) }, FENCE_METADATA);
}

/**
 * A server interceptor (pass it in `new Server({ interceptors: [...] })`): a call without a
 * readable fence ends INVALID_ARGUMENT, a stale one FAILED_PRECONDITION; the rest go on, their
 * token recorded as the newest for their lock.
 */
export function grpcFenceGuard(store: FenceStore, options: GrpcFenceGuardOptions = {}): ServerInterceptor {
  return (method, call) => {
    if (options.guards && !options.guards(method.path)) return new ServerInterceptingCall(call);
    const listener = new ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        let fence: Fence;
        try {
          fence = fenceFromMetadata(metadata);
        } catch (err) {
          call.sendStatus({ code: status.INVALID_ARGUMENT, details: (err as Error).message });
          return;
        }
        store.check(fence.lock, fence.token).then(
          (decision) => {
            if (decision.accepted) return next(metadata);
            options.onRefused?.({ lock: fence.lock, token: fence.token, newest: decision.newest });
            call.sendStatus({ code: status.FAILED_PRECONDITION, details: staleMessage(fence.lock, fence.token, decision.newest) });
          },
          () => call.sendStatus({ code: status.UNAVAILABLE, details: STORE_FAILED_MESSAGE }),
        );
      })
      .build();
    return new ServerInterceptingCall(call, new ResponderBuilder().withStart((next) => next(listener)).build());
  };
}
