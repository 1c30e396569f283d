// The resource side over HTTP: a Node `http` guard that works as connect/Express-style middleware
// `(req, res, next)` and, through `wrap`, around a plain `(req, res)` request handler.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readUnsigned, receivedValues, withAdmittedFence, type AdmittedFence, type FenceValues } from './admit';
import { judge, LOCK_RULE_FAILED, type GuardOptions } from './judge';
import { FenceRefusal } from './refusal';
import type { FenceStore } from './store';
import { FENCE_HEADERS, type Fence } from './wire';

export interface HttpFenceGuardOptions extends GuardOptions<[req: IncomingMessage]> {
  /** Which requests to guard; default: all (every method and path). */
  guards?: (req: IncomingMessage) => boolean;
}

export interface HttpFenceGuard {
  (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void;
  /** A request handler that runs `handler` only for requests the guard lets through. */
  wrap(handler: (req: IncomingMessage, res: ServerResponse) => unknown): (req: IncomingMessage, res: ServerResponse) => void;
}

const admitted = new WeakMap<IncomingMessage, AdmittedFence>();

/** The fence of a request the guard let through (undefined for one it did not guard). Also currentFence() inside the handler. */
export function fenceOf(req: IncomingMessage): AdmittedFence | undefined {
  return admitted.get(req);
}

/** The three fence headers' values in Node's request headers (lower-case names; `req.headersDistinct` keeps a header sent twice as two values). */
export function fenceValuesOfHeaders(headers: Record<string, string | string[] | undefined>): FenceValues {
  const all = (name: string): string[] => {
    const value = headers[name.toLowerCase()];
    return receivedValues(value === undefined ? [] : Array.isArray(value) ? value : [value]);
  };
  return { fence: all(FENCE_HEADERS.fence), lock: all(FENCE_HEADERS.lock), token: all(FENCE_HEADERS.token) };
}

/** Reads the unsigned fence from Node's request headers; throws FenceError naming the header at fault (a header sent twice is malformed). */
export function fenceFromHeaders(headers: Record<string, string | string[] | undefined>): Fence {
  return readUnsigned(fenceValuesOfHeaders(headers), FENCE_HEADERS);
}

function reply(res: ServerResponse, statusCode: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(statusCode, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Refuses a request as clients/conformance/signed-fence.md orders (400 missing or malformed, 403
 * signed fence required / unknown key / bad signature / another namespace / another lock, 409
 * lease ended / stale token, 503 store unavailable), every body JSON with `error` and `message`;
 * a request let through has its token recorded as the newest for its lock, and its handler reads
 * its fence with currentFence() or fenceOf(req).
 */
export function httpFenceGuard(store: FenceStore, options: HttpFenceGuardOptions = {}): HttpFenceGuard {
  const check = judge(store, options, FENCE_HEADERS, 'httpFenceGuard');
  const guard = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void => {
    if (options.guards && !options.guards(req)) return void next();
    check(fenceValuesOfHeaders(req.headersDistinct), [req]).then(
      (fence) => {
        admitted.set(req, fence);
        withAdmittedFence(fence, () => next());
      },
      (err) => {
        if (err instanceof FenceRefusal) reply(res, err.httpStatus, err.body());
        else reply(res, 500, { error: 'fence_guard_misconfigured', message: LOCK_RULE_FAILED });
      },
    );
  };
  return Object.assign(guard, {
    wrap: (handler: (req: IncomingMessage, res: ServerResponse) => unknown) => (req: IncomingMessage, res: ServerResponse) =>
      guard(req, res, (err) => {
        if (err) return reply(res, 500, { error: 'internal', message: 'the request failed before its handler' });
        Promise.resolve()
          .then(() => handler(req, res))
          .catch(() => res.headersSent || reply(res, 500, { error: 'internal', message: 'the handler failed' }));
      }),
  });
}
