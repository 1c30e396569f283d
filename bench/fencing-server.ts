// The server bench:fencing drives (a child process, so load and server do not share an event
// loop): one HTTP handler that stores a small body, reachable at /plain (no guard) and behind the
// fencing guard at /memory, /redis and /postgres, each with its store, and at /memory-signed behind
// a guard with a key ring (signed fences verified, bound to the lock in the path) on the memory
// store. A request's path is /<route>/<lock>. argv: Redis URL, PostgreSQL URL, the JWK set of the
// signed route. Prints "listening PORT" once ready.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Redis } from 'ioredis';
import { Pool } from 'pg';
import { httpFenceGuard, MemoryFenceStore, parseFenceKeys, PostgresFenceStore, RedisFenceStore } from '../clients/ts/fencing';

async function main(): Promise<void> {
  const [redisUrl, pgUrl, jwks] = process.argv.slice(2);
  const store = async (req: IncomingMessage, res: ServerResponse) => {
    for await (const chunk of req) void chunk; // the resource's write would go here
    res.writeHead(200, { 'content-length': 2 }).end('ok');
  };
  const lockInPath = (req: IncomingMessage) => decodeURIComponent(req.url!.slice(req.url!.lastIndexOf('/') + 1));
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => unknown> = {
    plain: store,
    memory: httpFenceGuard(new MemoryFenceStore()).wrap(store),
    'memory-signed': httpFenceGuard(new MemoryFenceStore(), { keys: parseFenceKeys(jwks), lock: lockInPath }).wrap(store),
    redis: httpFenceGuard(await RedisFenceStore.open(new Redis(redisUrl))).wrap(store),
    postgres: httpFenceGuard(await PostgresFenceStore.open(new Pool({ connectionString: pgUrl, max: 16 }))).wrap(store),
  };
  const server = createServer((req, res) => void routes[req.url?.split('/')[1] ?? '']?.(req, res));
  server.listen(0, '127.0.0.1', () => console.log(`listening ${(server.address() as { port: number }).port}`));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
