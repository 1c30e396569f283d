// The live dashboard: one page (plain HTML, CSS and a small script from web/dashboard, no build
// step) and its server-sent event stream of overviews. Read-only: GET only, and the overview
// carries what Inspect shows, never a token. Mounted on the server's HTTP listener; with API keys
// configured it needs one that may read (access.ts), and shows that key's namespace.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { HttpHandler } from '../http/listener';
import { packageRoot } from '../package-root';
import { RATE_WINDOW_S } from '../overview/grant-rate';
import { MAX_PAGE_SIZE } from '../overview/lock-page';
import { readOverview, type OverviewSource } from '../overview/overview';
import type { Principal } from '../auth/credentials';
import { accessOf } from './access';

/** How often a connected page gets a new overview: a change shows within a second. */
export const DEFAULT_INTERVAL_MS = 500;
const DEFAULT_PAGE_SIZE = 100;

const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/dashboard.css': { file: 'dashboard.css', type: 'text/css; charset=utf-8' },
  '/dashboard.js': { file: 'dashboard.js', type: 'text/javascript; charset=utf-8' },
};

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
  const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  return (req, res, path) => {
    const file = files.get(path);
    if (!file && path !== '/events') return false;
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
      res.writeHead(200, { ...HEADERS, 'content-type': file.type, 'content-length': file.body.length });
      res.end(req.method === 'HEAD' ? undefined : file.body);
      return true;
    }
    // A reload of the credentials that takes the key's right (or moves it to another namespace) ends the stream.
    const stillAllowed = () => {
      const now = accessOf(req, options.principalOfKey);
      return !('status' in now) && now.namespace === access.namespace;
    };
    streamOverviews(req, res, options.sourceFor(access.namespace), intervalMs, stillAllowed);
    return true;
  };
}

/** Sends an overview now and every intervalMs after the last one went out, until the page goes away or loses the right. */
function streamOverviews(req: IncomingMessage, res: ServerResponse, source: OverviewSource, intervalMs: number, stillAllowed: () => boolean): void {
  const query = new URL(req.url ?? '/', 'http://dashboard').searchParams;
  const size = Math.min(MAX_PAGE_SIZE, Math.max(1, Number(query.get('size')) || DEFAULT_PAGE_SIZE));
  const request = { cursor: /^[0-9-]+$/.test(query.get('cursor') ?? '') ? query.get('cursor')! : '0', namePrefix: query.get('prefix') ?? '', size };
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
    res.write(`data: ${JSON.stringify({ ...overview, at: Date.now(), cursor: request.cursor, prefix: request.namePrefix })}\n\n`);
    timer = setTimeout(() => void tick(), intervalMs);
  };
  void tick();
}
