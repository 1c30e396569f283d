// A real gRPC client (ts-proto stubs over grpc-js) with promise-returning calls for tests.
import { credentials, Metadata, type ChannelCredentials, type ChannelOptions, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import {
  LockServiceClient,
  type AcquireRequest,
  type AcquireResponse,
  type HoldRequest,
  type HoldResponse,
  type InspectResponse,
  type ReleaseRequest,
  type ReleaseResponse,
  type RenewResponse,
  type CheckFencingTokenResponse,
} from '../../gen/holdfast/v1/lock';

type Unary<Req, Res> = (req: Req, metadata: Metadata, options: { deadline?: number }, cb: (err: ServiceError | null, res: Res) => void) => unknown;

function promisify<Req, Res>(client: LockServiceClient, method: Unary<Req, Res>) {
  return (req: Req, deadlineMs?: number): Promise<Res> =>
    new Promise((resolve, reject) =>
      method.call(client, req, new Metadata(), deadlineMs ? { deadline: Date.now() + deadlineMs } : {}, (err, res) => (err ? reject(err) : resolve(res))),
    );
}

export interface HoldStream {
  call: ClientReadableStream<HoldResponse>;
  events: HoldResponse[];
  /** Resolves with the first event that matches. */
  next(match: (e: HoldResponse) => boolean): Promise<HoldResponse>;
  /** Resolves with the status the stream ended with. */
  ended: Promise<{ code: number; details: string }>;
}

export function connect(addr: string, channelOptions: ChannelOptions = {}, creds: ChannelCredentials = credentials.createInsecure()) {
  const client = new LockServiceClient(addr, creds, channelOptions);
  const acquireRaw = promisify<AcquireRequest, AcquireResponse>(client, client.acquire as never);
  // ts-proto writes a missing string field as "undefined": every field is filled in.
  const releaseRaw = promisify<ReleaseRequest, ReleaseResponse>(client, client.release as never);
  return {
    client,
    acquire: (req: Partial<AcquireRequest>, deadlineMs?: number) => acquireRaw(acquireRequest(req), deadlineMs),
    release: (req: { name: string; token: string; holdId?: string }, deadlineMs?: number) => releaseRaw({ holdId: '', ...req }, deadlineMs),
    renew: promisify<{ name: string; token: string; ttlMs: string }, RenewResponse>(client, client.renew as never),
    inspect: promisify<{ name: string }, InspectResponse>(client, client.inspect as never),
    checkFencingToken: promisify<{ name: string; fencingToken: string }, CheckFencingTokenResponse>(client, client.checkFencingToken as never),
    hold: (req: Partial<HoldRequest>, deadlineMs?: number) => holdStream(client, req, deadlineMs),
    close: () => client.close(),
  };
}

export type TestClient = ReturnType<typeof connect>;

export function acquireRequest(req: Partial<AcquireRequest>): AcquireRequest {
  return { name: '', owner: '', ttlMs: '0', waitTimeoutMs: '0', mode: 0, limit: 0, requestId: '', value: '', ...req };
}

function holdStream(client: LockServiceClient, req: Partial<HoldRequest>, deadlineMs?: number): HoldStream {
  const full: HoldRequest = {
    name: '',
    owner: '',
    ttlMs: '0',
    waitTimeoutMs: '0',
    mode: 0,
    limit: 0,
    maxHoldMs: '0',
    releaseOnDisconnect: false,
    value: '',
    ...req,
  };
  const call = client.hold(full, new Metadata(), deadlineMs ? { deadline: Date.now() + deadlineMs } : {});
  const events: HoldResponse[] = [];
  const listeners = new Set<() => void>();
  call.on('data', (e: HoldResponse) => {
    events.push(e);
    for (const l of [...listeners]) l();
  });
  const ended = new Promise<{ code: number; details: string }>((resolve) => {
    call.on('error', (err: ServiceError) => resolve({ code: err.code, details: err.details }));
    call.on('status', (s) => {
      if (s.code === 0) resolve({ code: 0, details: s.details });
    });
  });
  const next = (match: (e: HoldResponse) => boolean) =>
    new Promise<HoldResponse>((resolve, reject) => {
      const check = () => {
        const found = events.find(match);
        if (found) {
          listeners.delete(check);
          resolve(found);
        }
      };
      listeners.add(check);
      check();
      void ended.then((s) => {
        if (listeners.has(check)) {
          listeners.delete(check);
          reject(new Error(`stream ended (${s.code} ${s.details}) before the expected event`));
        }
      });
    });
  return { call, events, next, ended };
}
