// The live dashboard: one page (plain HTML, CSS and a small script from web/dashboard, no build
// step), sent with the overview of the moment inside it (first-paint.ts), and its server-sent
// event stream of overviews. Read-only: GET only, and the overview carries what Inspect shows,
// never a token. Mounted on the server's HTTP listener; with API keys configured it needs one
// that may read (access.ts), and shows that key's namespace.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { HttpHandler } from '../http/listener';
import { packageRoot } from '../package-root';
import { RATE_WINDOW_S } from '../overview/grant-rate';
import type { PageRequest } from '../overview/lock-page';
import { readOverview, type OverviewSource } from '../overview/overview';
import type { Principal } from '../auth/credentials';
import { accessOf } from './access';
import { firstPaintTemplate, overviewMessage, pageRequestOf } from './first-paint';

/** How often a connected page gets a new overview: a change shows within a second. */
export const DEFAULT_INTERVAL_MS = 500;

const FILES: Record<string, { file: string; type: string }> = {
  '/dashboard.css': { file: 'dashboard.css', type: 'text/css; charset=utf-8' },
  '/dashboard.js': { file: 'dashboard.js', type: 'text/javascript; charset=utf-8' },
};
const PAGE_TYPE = 'text/html; charset=utf-8';

const HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  // The page loads only its own files and opens only its own event stream.
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'",
};

export interface DashboardOptions {
  /** What a namespace's page shows. */
  sourceFor(namespace: string): OverviewSource;
  /** Whom an API key belongs to now (everyone, without authentication). */
  principalOfKey(key: string | undefined): Principal | undefined;
  intervalMs?: number;
}

export function dashboardHandler(options: DashboardOptions): HttpHandler {
  const dir = join(packageRoot(), 'web', 'dashboard');
  const files = new Map(Object.entries(FILES).map(([path, { file, type }]) => [path, { body: readFileSync(join(dir, file)), type }]));
  const page = firstPaintTemplate(readFileSync(join(dir, 'index.html'), 'utf8'));
  const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  return (req, res, path) => {
    const file = files.get(path);
    if (!file && path !== '/events' && path !== '/') return false;
    const access = accessOf(req, options.principalOfKey);
    if ('status' in access) {
      const body = `${access.message}\n`;
      res.writeHead(access.status, {
        ...HEADERS,
        'content-type': 'text/plain; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        ...(access.status === 401 ? { 'www-authenticate': 'Basic realm="holdfast dashboard: the API key as the password", charset="UTF-8"' } : {}),
      });
      res.end(body);
      return true;
    }
    if (file) {
      send(req, res, file.type, file.body);
      return true;
    }
    const source = options.sourceFor(access.namespace);
    const request = pageRequestOf(req);
    if (path === '/') {
      void readOverview(source, request, RATE_WINDOW_S).then((overview) => send(req, res, PAGE_TYPE, page(overviewMessage(overview, request))));
      return true;
    }
    // A reload of the credentials that takes the key's right (or moves it to another namespace) ends the stream.
    const stillAllowed = () => {
      const now = accessOf(req, options.principalOfKey);
      return !('status' in now) && now.namespace === access.namespace;
    };
    streamOverviews(req, res, source, request, intervalMs, stillAllowed);
    return true;
  };
}

function send(req: IncomingMessage, res: ServerResponse, type: string, body: Buffer): void {
  res.writeHead(200, { ...HEADERS, 'content-type': type, 'content-length': body.length });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** Sends an overview now and every intervalMs after the last one went out, until the page goes away or loses the right. */
function streamOverviews(
  req: IncomingMessage,
  res: ServerResponse,
  source: OverviewSource,
  request: PageRequest,
  intervalMs: number,
  stillAllowed: () => boolean,
): void {
  res.writeHead(200, { ...HEADERS, 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive' });
  let open = true;
  let timer: NodeJS.Timeout | undefined;
  const close = () => {
    open = false;
    clearTimeout(timer);
  };
  req.on('close', close);
  res.on('error', close);
  const tick = async () => {
    if (!stillAllowed()) {
      close();
      res.end();
      return;
    }
    const overview = await readOverview(source, request, RATE_WINDOW_S);
    if (!open) return;
    res.write(`data: ${overviewMessage(overview, request)}\n\n`);
    timer = setTimeout(() => void tick(), intervalMs);
  };
  void tick();
}
