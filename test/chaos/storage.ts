// The storage service the chaos workers protect with their locks (its own process): one list per
// lock, and Kleppmann's fence. It refuses a fencing token lower than one it has already accepted
// for that lock, so a holder that was paused or cut off past its lease cannot write over its
// successor. A read counts as accepted too: a holder's first read raises the fence, so an older
// holder's late write cannot slip in between its successor's read and write (a lost update).
//
// Rules by kind: a plain lock's holder and a read-write lock's writer are refused below every
// token accepted so far; a reader only below the newest writer's (readers share the lock with
// each other, never with a writer). Semaphore holders are not fenced: several hold at once, and
// nothing in a token says which permit it had. A client that skips the fence (fenced: false)
// is accepted unchecked, as any storage must when it is not given a token.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { monoNow } from './clock';
import type { ListItem, StorageDump, StorageRecord, StorageReply, StorageRequest } from './events';

interface LockState {
  list: ListItem[];
  /** Highest token accepted from any holder. */
  highest: bigint;
  /** Highest token accepted from an exclusive holder (plain lock or writer). */
  highestExclusive: bigint;
}

const locks = new Map<string, LockState>();
const records: StorageRecord[] = [];

function stateOf(lock: string): LockState {
  let state = locks.get(lock);
  if (!state) {
    state = { list: [], highest: 0n, highestExclusive: 0n };
    locks.set(lock, state);
  }
  return state;
}

/** Why the fence refuses this request, or undefined when it passes. */
function fenceRefuses(req: StorageRequest, state: LockState, token: bigint): string | undefined {
  if (!req.fenced || req.kind === 'semaphore') return undefined;
  const floor = req.kind === 'reader' ? state.highestExclusive : state.highest;
  return token < floor ? `token ${token} is below ${floor}, already accepted` : undefined;
}

export function handle(req: StorageRequest): StorageReply {
  const state = stateOf(req.lock);
  const token = BigInt(req.token);
  const refused = fenceRefuses(req, state, token);
  let dropped = 0;
  if (!refused) {
    if (req.fenced && req.kind !== 'semaphore') {
      if (token > state.highest) state.highest = token;
      if (req.kind !== 'reader' && token > state.highestExclusive) state.highestExclusive = token;
    }
    const entry: ListItem = { item: req.item ?? '', token: req.token, kind: req.kind, client: req.client };
    if (req.op === 'write') {
      const base = Math.min(req.base ?? state.list.length, state.list.length);
      dropped = state.list.length - base;
      state.list.length = base;
      state.list.push(entry);
    } else if (req.op === 'append') {
      state.list.push(entry);
    }
  }
  records.push({ ...req, t: monoNow(), ok: !refused, dropped });
  return { ok: !refused, length: state.list.length, detail: refused };
}

export function dump(): StorageDump {
  const lists: Record<string, ListItem[]> = {};
  for (const [lock, state] of locks) lists[lock] = state.list;
  return { lists, records };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'POST' && req.url === '/op') {
    const reply = handle(JSON.parse(await readBody(req)) as StorageRequest);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
  } else if (req.method === 'GET' && req.url === '/dump') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(dump()));
  } else {
    res.writeHead(404).end();
  }
}

function main(): void {
  const server = createServer((req, res) => {
    serve(req, res).catch((err) => res.writeHead(400).end(String(err)));
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    process.send!({ type: 'listening', port });
  });
  process.on('message', (message: { type: string }) => {
    if (message.type === 'clock') process.send!({ type: 'clock', t: monoNow() });
  });
  process.on('disconnect', () => process.exit(0));
}

if (require.main === module) main();
