// The "gRPC floor" of issue 10: holdfast.v1.LockService Acquire/Release answered from memory on
// the same @grpc/grpc-js stack, with a strict FIFO wait queue (Release hands the lock to the
// head). No Redis, no leases, no fencing store: the most any grpc-js lock server can do on this
// host, so every benchmark figure is quoted as a ratio to it, measured in the same run.
//
//   node bench/dist/bench/floor-server.js    prints "floor listening <port>" once it listens
import { Server, ServerCredentials, status, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { LockServiceService, type AcquireRequest, type AcquireResponse, type ReleaseRequest, type ReleaseResponse } from '../gen/holdfast/v1/lock';

interface Waiter {
  respond(token: string): void;
  timer: NodeJS.Timeout;
}

interface FloorLock {
  token: string;
  fence: number;
  queue: Waiter[];
}

const locks = new Map<string, FloorLock>();
let nextToken = 0;
const NOT_ACQUIRED: AcquireResponse = { acquired: false, token: '', fencingToken: '0', ttlMs: '0', holdCount: 0, leaseStartedAfterMs: '0', signedFence: '' };

function granted(lock: FloorLock, token: string, ttlMs: string): AcquireResponse {
  lock.token = token;
  lock.fence++;
  return { acquired: true, token, fencingToken: String(lock.fence), ttlMs, holdCount: 1, leaseStartedAfterMs: '0', signedFence: '' };
}

function acquire(call: ServerUnaryCall<AcquireRequest, AcquireResponse>, callback: sendUnaryData<AcquireResponse>): void {
  const { name, ttlMs, waitTimeoutMs } = call.request;
  let lock = locks.get(name);
  if (!lock) locks.set(name, (lock = { token: '', fence: 0, queue: [] }));
  const token = String(++nextToken);
  if (lock.token === '') {
    callback(null, granted(lock, token, ttlMs));
    return;
  }
  const waitMs = Number(waitTimeoutMs);
  if (waitMs <= 0) {
    callback(null, NOT_ACQUIRED);
    return;
  }
  const held = lock;
  const waiter: Waiter = {
    respond: (t) => callback(null, granted(held, t, ttlMs)),
    timer: setTimeout(() => {
      held.queue.splice(held.queue.indexOf(waiter), 1);
      callback(null, NOT_ACQUIRED);
    }, waitMs),
  };
  held.queue.push(waiter);
}

function release(call: ServerUnaryCall<ReleaseRequest, ReleaseResponse>, callback: sendUnaryData<ReleaseResponse>): void {
  const lock = locks.get(call.request.name);
  if (!lock || lock.token !== call.request.token) {
    callback({ code: status.NOT_FOUND, details: 'the token holds nothing' });
    return;
  }
  const next = lock.queue.shift();
  if (next) {
    clearTimeout(next.timer);
    next.respond(String(++nextToken));
  } else {
    locks.delete(call.request.name);
  }
  callback(null, { released: true, holdCount: 0 });
}

const unimplemented = (_call: unknown, callback: sendUnaryData<never>) => callback({ code: status.UNIMPLEMENTED });
const server = new Server();
server.addService(LockServiceService, { acquire, release, renew: unimplemented, inspect: unimplemented, checkFencingToken: unimplemented, hold: () => {} });
server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  process.stdout.write(`floor listening ${port}\n`);
});
process.once('SIGTERM', () => server.forceShutdown());
