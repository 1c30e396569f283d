// Any LockService method over a real grpc-js channel, with the status it ended with as a plain
// value (never a rejection), a deadline, and a cancel: for tests that look at how calls end.
import { Metadata, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import * as lock from '../../gen/holdfast/v1/lock';

type Codec<T> = { fromPartial(object: object): T };

/** How a call ended: its status code, and its response when it had one. */
export interface Ended<Res> {
  code: number;
  details: string;
  response?: Res;
}

export interface RawUnary<Res> {
  ended: Promise<Ended<Res>>;
  cancel(): void;
}

export interface RawStream<Ev> {
  events: Ev[];
  /** Resolves with the first event that matches; rejects if the stream ends first. */
  next(match: (event: Ev) => boolean): Promise<Ev>;
  ended: Promise<Ended<never>>;
  cancel(): void;
}

type UnaryMethod = (req: unknown, md: Metadata, options: object, cb: (err: ServiceError | null, res: unknown) => void) => { cancel(): void };
type StreamMethod = (req: unknown, md: Metadata, options: object) => ClientReadableStream<unknown>;

const options = (deadlineMs?: number) => (deadlineMs ? { deadline: Date.now() + deadlineMs } : {});

export function rawCalls(client: lock.LockServiceClient) {
  function unary<Req, Res>(method: UnaryMethod, codec: Codec<Req>) {
    return (request: Partial<Req>, deadlineMs?: number): RawUnary<Res> => {
      let call!: { cancel(): void };
      const ended = new Promise<Ended<Res>>((resolve) => {
        call = method.call(client, codec.fromPartial(request), new Metadata(), options(deadlineMs), (err, res) =>
          resolve(err ? { code: err.code, details: err.details } : { code: 0, details: '', response: res as Res }),
        );
      });
      return { ended, cancel: () => call.cancel() };
    };
  }
  function stream<Req, Ev>(method: StreamMethod, codec: Codec<Req>) {
    return (request: Partial<Req>, deadlineMs?: number): RawStream<Ev> => {
      const call = method.call(client, codec.fromPartial(request), new Metadata(), options(deadlineMs)) as ClientReadableStream<Ev>;
      const events: Ev[] = [];
      const waiting = new Set<() => void>();
      call.on('data', (event: Ev) => {
        events.push(event);
        for (const check of [...waiting]) check();
      });
      const ended = new Promise<Ended<never>>((resolve) => {
        call.on('error', (err: ServiceError) => resolve({ code: err.code, details: err.details }));
        call.on('status', (s) => s.code === 0 && resolve({ code: 0, details: s.details }));
      });
      const next = (match: (event: Ev) => boolean) =>
        new Promise<Ev>((resolve, reject) => {
          const check = () => {
            const found = events.find(match);
            if (!found) return;
            waiting.delete(check);
            resolve(found);
          };
          waiting.add(check);
          check();
          void ended.then((s) => {
            if (waiting.delete(check)) reject(new Error(`the stream ended (${s.code} ${s.details}) before the event`));
          });
        });
      return { events, next, ended, cancel: () => call.cancel() };
    };
  }
  const c = client as unknown as Record<string, UnaryMethod & StreamMethod>;
  return {
    acquire: unary<lock.AcquireRequest, lock.AcquireResponse>(c.acquire, lock.AcquireRequest),
    release: unary<lock.ReleaseRequest, lock.ReleaseResponse>(c.release, lock.ReleaseRequest),
    renew: unary<lock.RenewRequest, lock.RenewResponse>(c.renew, lock.RenewRequest),
    inspect: unary<lock.InspectRequest, lock.InspectResponse>(c.inspect, lock.InspectRequest),
    checkFencingToken: unary<lock.CheckFencingTokenRequest, lock.CheckFencingTokenResponse>(c.checkFencingToken, lock.CheckFencingTokenRequest),
    setValue: unary<lock.SetValueRequest, lock.SetValueResponse>(c.setValue, lock.SetValueRequest),
    acquireSet: unary<lock.AcquireSetRequest, lock.AcquireSetResponse>(c.acquireSet, lock.AcquireSetRequest),
    releaseSet: unary<lock.ReleaseSetRequest, lock.ReleaseSetResponse>(c.releaseSet, lock.ReleaseSetRequest),
    hold: stream<lock.HoldRequest, lock.HoldResponse>(c.hold, lock.HoldRequest),
    watch: stream<lock.WatchRequest, lock.WatchResponse>(c.watch, lock.WatchRequest),
    holdSet: stream<lock.HoldSetRequest, lock.HoldSetResponse>(c.holdSet, lock.HoldSetRequest),
  };
}

export type RawCalls = ReturnType<typeof rawCalls>;
