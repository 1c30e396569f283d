// A loopback TCP proxy in front of one address, for tests that need a misbehaving network: a
// stall freezes every connection without closing it (bytes are held, nothing is lost), a cut
// drops every connection at once.
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  /** host:port to dial instead of the target. */
  addr: string;
  /** Stops forwarding in both directions on every connection, new ones too; nothing is closed. */
  stall(): void;
  /** Delivers what the stall held back, in order, and forwards again. */
  resume(): void;
  /** Destroys every current connection (and what a stall held for it); new ones are still accepted. */
  cut(): void;
  /** Cuts every connection and stops listening. */
  close(): Promise<void>;
}

/** One proxied connection: what the client dialled and the proxy's own connection to the target. */
interface Pair {
  client: Socket;
  upstream: Socket;
  /** Writes, ends and destroys that arrived during a stall, to run in order on resume. */
  held: (() => void)[];
}

function splitAddr(addr: string): { host: string; port: number } {
  const colon = addr.lastIndexOf(':');
  return { host: addr.slice(0, colon), port: Number(addr.slice(colon + 1)) };
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let stalled = false;

  const act = (pair: Pair, action: () => void) => (stalled ? pair.held.push(action) : action());
  const forward = (pair: Pair, from: Socket, to: Socket) => {
    from.on('data', (chunk: Buffer) => act(pair, () => to.write(chunk)));
    from.on('end', () => act(pair, () => to.end()));
    from.on('error', () => {}); // 'close' follows and passes it on
    from.on('close', (hadError) =>
      act(pair, () => {
        if (hadError) to.destroy();
        else if (!to.destroyed) to.end();
        if (pair.client.destroyed && pair.upstream.destroyed) pairs.delete(pair);
      }),
    );
  };
  const pauseBoth = (pair: Pair) => {
    pair.client.pause();
    pair.upstream.pause();
  };

  const server: Server = createServer((client) => {
    const upstream = connect(splitAddr(target));
    const pair: Pair = { client, upstream, held: [] };
    pairs.add(pair);
    forward(pair, client, upstream);
    forward(pair, upstream, client);
    if (stalled) pauseBoth(pair);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };

  const cut = () => {
    for (const pair of pairs) {
      pair.held = [];
      pair.client.destroy();
      pair.upstream.destroy();
    }
    pairs.clear();
  };

  return {
    addr: `127.0.0.1:${port}`,
    stall() {
      stalled = true;
      for (const pair of pairs) pauseBoth(pair);
    },
    resume() {
      stalled = false;
      for (const pair of [...pairs]) {
        const held = pair.held;
        pair.held = [];
        for (const action of held) action();
        pair.client.resume();
        pair.upstream.resume();
      }
    },
    cut,
    close() {
      cut();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
