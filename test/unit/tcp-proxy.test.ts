// The test TCP proxy (test/support/tcp-proxy.ts): a stall really holds bytes back in both
// directions and resume delivers them; a cut ends connections and new ones still work.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';

/** Everything a socket has received so far, and a way to wait for some text in it. */
function received(socket: Socket) {
  let text = '';
  const waiters = new Set<() => void>();
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    text += chunk;
    for (const waiter of [...waiters]) waiter();
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    get text() {
      return text;
    },
    closed,
    until(part: string): Promise<void> {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!text.includes(part)) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
        void closed.then(() => waiters.has(check) && reject(new Error(`closed before "${part}" arrived (got "${text}")`)));
      });
    },
  };
}

type Received = ReturnType<typeof received>;

/** An echo server that also keeps its side of every connection, to push bytes or read what came. */
let target: Server;
let targetAddr: string;
const accepted: { socket: Socket; got: Received }[] = [];
const arrivals = new Set<() => void>();

beforeAll(async () => {
  target = createServer((socket) => {
    const got = received(socket);
    socket.on('data', (chunk) => socket.write(chunk));
    socket.on('error', () => {});
    accepted.push({ socket, got });
    for (const arrival of [...arrivals]) arrival();
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  targetAddr = `127.0.0.1:${(target.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((resolve) => target.close(() => resolve())));

/** Connects through `proxy` and resolves once the target has accepted it, with both ends. */
async function dial(proxy: TcpProxy) {
  const before = accepted.length;
  const arrived = new Promise<void>((resolve) => {
    const arrival = () => {
      if (accepted.length <= before) return;
      arrivals.delete(arrival);
      resolve();
    };
    arrivals.add(arrival);
  });
  const [host, port] = proxy.addr.split(':');
  const socket = connect(Number(port), host);
  socket.on('error', () => {});
  const got = received(socket);
  await arrived;
  return { socket, got, far: accepted[before] };
}

/** Round trips through an unstalled proxy: by the time they are done, held bytes would have arrived. */
async function roundTrips(through: Awaited<ReturnType<typeof dial>>, count = 20): Promise<void> {
  for (let i = 0; i < count; i++) {
    const word = `rt${i}.`;
    through.socket.write(word);
    await through.got.until(word);
  }
}

describe('startTcpProxy', () => {
  let proxy: TcpProxy;
  let control: TcpProxy;
  beforeAll(async () => {
    [proxy, control] = await Promise.all([startTcpProxy(targetAddr), startTcpProxy(targetAddr)]);
  });
  afterAll(() => Promise.all([proxy.close(), control.close()]));

  it('forwards bytes both ways', async () => {
    const conn = await dial(proxy);
    conn.socket.write('hello');
    await conn.got.until('hello');
    expect(conn.far.got.text).toBe('hello');
    conn.socket.destroy();
  });

  it('stall holds bytes back in both directions, on old and new connections; resume delivers them in order', async () => {
    const old = await dial(proxy);
    const beside = await dial(control);
    old.socket.write('a');
    await old.got.until('a');

    proxy.stall();
    old.socket.write('b');
    old.far.socket.write('pushed');
    const fresh = await dial(proxy); // the target accepts it, but no byte passes
    fresh.socket.write('fresh');
    await roundTrips(beside);
    expect(old.far.got.text).toBe('a');
    expect(old.got.text).toBe('a');
    expect(fresh.far.got.text).toBe('');

    proxy.resume();
    await Promise.all([old.got.until('apushedb'), fresh.got.until('fresh')]);
    expect(old.far.got.text).toBe('ab');
    for (const conn of [old, fresh, beside]) conn.socket.destroy();
  });

  it('cut ends every connection; new ones still go through', async () => {
    const first = await dial(proxy);
    proxy.cut();
    await Promise.all([first.got.closed, first.far.got.closed]);
    const next = await dial(proxy);
    next.socket.write('again');
    await next.got.until('again');
    next.socket.destroy();
  });
});
