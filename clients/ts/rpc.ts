// The unary RPCs as promises over the generated grpc-js stub, taking complete requests.
import { Metadata, type CallOptions, type ServiceError } from '@grpc/grpc-js';
import type {
  AcquireRequest,
  AcquireResponse,
  AcquireSetRequest,
  AcquireSetResponse,
  CheckFencingTokenRequest,
  CheckFencingTokenResponse,
  InspectRequest,
  InspectResponse,
  LockServiceClient,
  ReleaseRequest,
  ReleaseResponse,
  ReleaseSetRequest,
  ReleaseSetResponse,
  RenewRequest,
  RenewResponse,
  SetValueRequest,
  SetValueResponse,
} from '../../gen/holdfast/v1/lock';
import { deadlockOr } from './errors';

type Callback<Res> = (err: ServiceError | null, res: Res) => void;
type UnaryMethod<Req, Res> = (req: Req, metadata: Metadata, options: Partial<CallOptions>, cb: Callback<Res>) => unknown;

/** A unary call that fails after `timeoutMs` plus whatever extra time a request asks for. */
export type Unary<Req, Res> = (req: Req, extraMs?: number) => Promise<Res>;

function unary<Req, Res>(stub: LockServiceClient, method: UnaryMethod<Req, Res>, timeoutMs: number): Unary<Req, Res> {
  return (req, extraMs = 0) =>
    new Promise((resolve, reject) => {
      const deadline = Date.now() + timeoutMs + extraMs;
      const name = (req as { name?: unknown }).name;
      method.call(stub, req, new Metadata(), { deadline }, (err, res) =>
        err ? reject(deadlockOr(err, typeof name === 'string' ? name : undefined)) : resolve(res),
      );
    });
}

export function unaryCalls(stub: LockServiceClient, timeoutMs: number) {
  return {
    acquire: unary<AcquireRequest, AcquireResponse>(stub, stub.acquire as never, timeoutMs),
    release: unary<ReleaseRequest, ReleaseResponse>(stub, stub.release as never, timeoutMs),
    renew: unary<RenewRequest, RenewResponse>(stub, stub.renew as never, timeoutMs),
    inspect: unary<InspectRequest, InspectResponse>(stub, stub.inspect as never, timeoutMs),
    checkFencingToken: unary<CheckFencingTokenRequest, CheckFencingTokenResponse>(stub, stub.checkFencingToken as never, timeoutMs),
    setValue: unary<SetValueRequest, SetValueResponse>(stub, stub.setValue as never, timeoutMs),
    acquireSet: unary<AcquireSetRequest, AcquireSetResponse>(stub, stub.acquireSet as never, timeoutMs),
    releaseSet: unary<ReleaseSetRequest, ReleaseSetResponse>(stub, stub.releaseSet as never, timeoutMs),
  };
}

export type UnaryCalls = ReturnType<typeof unaryCalls>;

/** True for an error that a grpc-js call failed with. */
export function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as ServiceError).code === 'number' && 'details' in err;
}
