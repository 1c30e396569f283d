// A small HTTP resource behind an httpFenceGuard, for the signed fence tests: paths under /mw/ go
// through the guard as (req, res, next) middleware, the rest through guard.wrap(handler). The
// handler records what currentFence() and fenceOf(req) give it, after an await.
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AdmittedFence, currentFence, fenceOf, type HttpFenceGuard } from '../../clients/ts/fencing';

export interface HttpApp {
  url: string;
  /** Bodies the handler stored, in order: the guard let them through. */
  stored: string[];
  /** Per handled request: what currentFence() and fenceOf(req) gave. */
  seen: { current: AdmittedFence | undefined; ofReq: AdmittedFence | undefined }[];
  /** A request with `headers` (an array value is sent as that many header lines), its status and JSON body. */
  send(path: string, headers: Record<string, string | string[]>, method?: string, body?: string): Promise<{ status: number; body: Record<string, string> }>;
  close(): Promise<void>;
}

export async function startHttpApp(guard: HttpFenceGuard): Promise<HttpApp> {
  const stored: string[] = [];
  const seen: HttpApp['seen'] = [];
  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    await new Promise((resolve) => setImmediate(resolve));
    seen.push({ current: currentFence(), ofReq: fenceOf(req) });
    stored.push(body);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ stored: body }));
  };
  const wrapped = guard.wrap(handler);
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/mw/')) guard(req, res, () => void handler(req, res));
    else wrapped(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url,
    stored,
    seen,
    send: (path, headers, method = 'PUT', body = 'x') =>
      new Promise((resolve, reject) => {
        const req = request(`${url}${path}`, { method, headers, agent: false }, (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk)).on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : {} }));
        });
        req.on('error', reject);
        req.end(method === 'GET' || method === 'HEAD' ? undefined : body);
      }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
