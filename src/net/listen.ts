// A listening address the server cannot have, said in one line that names the address, the
// option it came from and the cause in words: never grpc-js's "No address added out of total 1
// resolved". Shared by the gRPC port (src/server.ts), the HTTP listener (src/http/listener.ts)
// and the probe the --workers primary makes before it starts the embedded Redis.
import { createServer } from 'node:net';

/** The address cannot be listened on; its message is the one line a user sees. */
export class ListenError extends Error {}

const CAUSES: Record<string, string> = {
  EADDRINUSE: 'the port is in use by another process',
  EADDRNOTAVAIL: "the address is not one of this machine's",
  EACCES: 'permission denied (a port below 1024 needs root or CAP_NET_BIND_SERVICE)',
  EPERM: 'permission denied',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name does not resolve (no answer from DNS)',
};

/**
 * The one line for `err`, a listen failure of Node's (its `code`) or grpc-js's (its message
 * lists each address's errno, or says the name did not resolve).
 */
export function listenError(address: string, option: string, err: unknown): ListenError {
  const error = err as NodeJS.ErrnoException;
  const message = String(error?.message ?? err);
  const code = error?.code ?? /\b(E[A-Z_]{3,})\b/.exec(message)?.[1] ?? (/Name resolution failed/.test(message) ? 'ENOTFOUND' : undefined);
  const cause = (code && CAUSES[code]) ?? message.split('\n')[0];
  return new ListenError(`cannot listen on ${address} (${option}): ${cause}`);
}

/** host:port or [v6]:port as Node listens on them; undefined for any other form (unix:, a bare port). */
export function hostAndPort(address: string): { host: string; port: number } | undefined {
  const match = /^\[?([^\]]*?)\]?:(\d+)$/.exec(address);
  if (!match || Number(match[2]) > 65535) return undefined;
  return { host: match[1] || '0.0.0.0', port: Number(match[2]) };
}

/**
 * Throws the ListenError `address` would meet if a listener took it now (bound, then let go at
 * once). For a process that cannot bind first itself: the --workers primary, whose workers bind.
 */
export async function probeListen(address: string, option: string): Promise<void> {
  const at = hostAndPort(address);
  if (!at || at.port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (err) => reject(listenError(address, option, err)));
    probe.listen(at.port, at.host, () => probe.close(() => resolve()));
  });
}
