// The server's one HTTP listener, next to the gRPC one: /metrics for Prometheus, /healthz (the
// process answers) and /readyz (it serves: Redis reachable, no quarantine) for probes,
// /fence-keys (the public keys of signed fences, a JWK set), and whatever is mounted on it (the
// dashboard, src/dashboard). GET and HEAD only: it changes nothing.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostAndPort, listenError } from '../net/listen';

/** Answers the paths it knows (and returns true); false leaves the request to the listener's 404. */
export type HttpHandler = (req: IncomingMessage, res: ServerResponse, path: string) => boolean;

export interface HttpRoutes {
  /** The Prometheus text exposition and its content type. */
  metrics(): Promise<{ contentType: string; body: string }>;
  /** Why the server does not serve now, or null when it does. */
  notReady(): string | null;
  /** The JWK set of the keys fences are signed with (empty without a signing key). */
  fenceKeys?(): object;
  /** Further paths (the dashboard). */
  mounted?: HttpHandler;
}

export interface HttpListener {
  port: number;
  close(): Promise<void>;
}

/** host:port, [v6]:port. */
export function parseHostPort(listen: string): { host: string; port: number } {
  const at = hostAndPort(listen);
  if (!at) throw new Error(`--http-listen must be HOST:PORT, got "${listen}"`);
  return at;
}

export async function startHttpListener(listen: string, routes: HttpRoutes): Promise<HttpListener> {
  const { host, port } = parseHostPort(listen);
  const server = createServer((req, res) => void answer(req, res, routes));
  server.keepAliveTimeout = 65_000; // longer than Prometheus's scrape interval: a scraper keeps its connection
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(listenError(listen, '--http-listen', err)));
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function answer(req: IncomingMessage, res: ServerResponse, routes: HttpRoutes): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'only GET\n');
  try {
    if (path === '/metrics') {
      const { contentType, body } = await routes.metrics();
      return send(res, 200, body, contentType);
    }
    if (path === '/healthz') return send(res, 200, 'ok\n');
    // Public keys, public as /metrics is; a guard fetches them once, a rotation shows within a minute.
    if (path === '/fence-keys' && routes.fenceKeys)
      return send(res, 200, JSON.stringify(routes.fenceKeys()), 'application/json', { 'cache-control': 'public, max-age=60' });
    if (path === '/readyz') {
      const why = routes.notReady();
      return why === null ? send(res, 200, 'ready\n') : send(res, 503, `not ready: ${why}\n`);
    }
    if (routes.mounted?.(req, res, path)) return;
    send(res, 404, 'not found: try /, /metrics, /healthz, /readyz or /fence-keys\n');
  } catch (err) {
    send(res, 500, `error: ${(err as Error).message}\n`);
  }
}

function send(res: ServerResponse, code: number, body: string, contentType = 'text/plain; charset=utf-8', headers: Record<string, string> = {}): void {
  res.writeHead(code, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}
