// The protected resource: a tiny HTTP storage service keeping one document. PUT /doc replaces it,
// GET /doc reads it. With a fence store, every PUT goes through the fencing guard first; without
// one (the negative control) any holder, however stale, overwrites it.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { fenceOf, httpFenceGuard, type FenceStore, type Refusal } from '../../clients/ts/fencing';

export interface Write {
  value: string;
  /** The fencing token it came with (undefined: no guard). */
  token?: string;
}

export interface StorageService {
  url: string;
  /** The document as it is now. */
  doc(): string | undefined;
  /** Every write that was applied, in order. */
  writes: Write[];
  /** Every stale write the guard refused. */
  refusals: Refusal[];
  close(): Promise<void>;
}

export async function startStorageService(store: FenceStore | null): Promise<StorageService> {
  let doc: string | undefined;
  const writes: Write[] = [];
  const refusals: Refusal[] = [];
  const put = async (req: IncomingMessage, res: ServerResponse) => {
    let value = '';
    for await (const chunk of req) value += chunk;
    doc = value;
    writes.push({ value, token: fenceOf(req)?.token.toString() });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ stored: value }));
  };
  const guarded = store ? httpFenceGuard(store, { guards: (req) => req.method === 'PUT', onRefused: (r) => refusals.push(r) }).wrap(put) : put;
  const server = createServer((req, res) => {
    if (req.url !== '/doc') return res.writeHead(404).end();
    if (req.method === 'GET') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ doc: doc ?? null }));
    if (req.method === 'PUT') return void guarded(req, res);
    res.writeHead(405).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    doc: () => doc,
    writes,
    refusals,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
