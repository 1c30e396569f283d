// The resource side over HTTP: a Node `http` guard that works as connect/Express-style middleware
// `(req, res, next)` and, through `wrap`, around a plain `(req, res)` request handler.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Refusal } from './refusal';
import { badFenceBody, staleBody, STORE_FAILED_MESSAGE } from './refusal';
import type { FenceStore } from './store';
import { decodeFence, FENCE_HEADERS, FenceError, type Fence } from './wire';

export interface HttpFenceGuardOptions {
  /** Which requests to guard; default: all. */
  guards?: (req: IncomingMessage) => boolean;
  /** Called for every stale request refused (to report a holder that lost its lock). */
  onRefused?: (refusal: Refusal) => void;
}

export interface HttpFenceGuard {
  (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void;
  /** A request handler that runs `handler` only for requests the guard lets through. */
  wrap(handler: (req: IncomingMessage, res: ServerResponse) => unknown): (req: IncomingMessage, res: ServerResponse) => void;
}

const admitted = new WeakMap<IncomingMessage, Fence>();

/** The fence of a request the guard let through (undefined for one it did not guard). */
export function fenceOf(req: IncomingMessage): Fence | undefined {
  return admitted.get(req);
}

/**
 * Reads the fence from Node's request headers (lower-case names; `req.headersDistinct` keeps a
 * header sent twice as two values, which is malformed); throws FenceError naming the header at fault.
 */
export function fenceFromHeaders(headers: Record<string, string | string[] | undefined>): Fence {
  const one = (name: string): string | undefined => {
    const value = headers[name.toLowerCase()];
    if (!Array.isArray(value)) return value;
    if (value.length > 1) throw new FenceError('malformed', name === FENCE_HEADERS.lock ? 'lock' : 'token', name, 'must be sent once');
    return value[0];
  };
  return decodeFence({ lock: one(FENCE_HEADERS.lock), token: one(FENCE_HEADERS.token) }, FENCE_HEADERS);
}

function reply(res: ServerResponse, statusCode: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(statusCode, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * A missing or malformed fence gets 400, a stale token 409 (bodies as in fencing.json); a request
 * let through has its token recorded as the newest for its lock.
 */
export function httpFenceGuard(store: FenceStore, options: HttpFenceGuardOptions = {}): HttpFenceGuard {
  const guard = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void => {
    if (options.guards && !options.guards(req)) return void next();
    let fence: Fence;
    try {
      fence = fenceFromHeaders(req.headersDistinct);
    } catch (err) {
      if (!(err instanceof FenceError)) throw err;
      return void reply(res, 400, badFenceBody(err));
    }
    store.check(fence.lock, fence.token).then(
      (decision) => {
        if (!decision.accepted) {
          options.onRefused?.({ lock: fence.lock, token: fence.token, newest: decision.newest });
          return reply(res, 409, staleBody(fence.lock, fence.token, decision.newest));
        }
        admitted.set(req, fence);
        next();
      },
      () => reply(res, 503, { error: 'fence_store_unavailable', message: STORE_FAILED_MESSAGE }),
    );
  };
  return Object.assign(guard, {
    wrap: (handler: (req: IncomingMessage, res: ServerResponse) => unknown) => (req: IncomingMessage, res: ServerResponse) =>
      guard(req, res, (err) => {
        if (err) return reply(res, 500, { error: 'internal' });
        Promise.resolve()
          .then(() => handler(req, res))
          .catch(() => res.headersSent || reply(res, 500, { error: 'internal' }));
      }),
  });
}
