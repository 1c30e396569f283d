// Protected mode, as Redis has it: a server that anyone on the network could reach must not start
// open to everyone by accident. On a non-loopback address it needs TLS or API keys, or --insecure
// to say that being open is intended.
import { isIP } from 'node:net';

export interface ExposureSettings {
  /** The --listen address, host:port ([v6]:port, unix:path). */
  listen: string;
  tls: boolean;
  /** API keys (or client certificates mapped to roles) are configured. */
  authConfigured: boolean;
  insecure: boolean;
}

/** The host part of a grpc-js listen address; '' for a Unix socket (local only). */
export function listenHost(listen: string): string {
  if (listen.startsWith('unix:')) return '';
  if (listen.startsWith('[')) return listen.slice(1, listen.indexOf(']'));
  const colon = listen.lastIndexOf(':');
  return colon < 0 ? listen : listen.slice(0, colon);
}

/** Loopback only: localhost, 127.0.0.0/8, ::1 (and its v4-mapped form), or a Unix socket. */
export function isLoopbackListen(listen: string): boolean {
  if (listen.startsWith('unix:')) return true;
  const host = listenHost(listen).toLowerCase();
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || /^::ffff:127\./.test(host);
  return false; // 0.0.0.0, ::, '' (every interface), a LAN address or a name that may resolve to one
}

/** Why the server must not start with these settings (one line, naming what to add), or undefined. */
export function protectedModeRefusal(settings: ExposureSettings): string | undefined {
  if (settings.tls || settings.authConfigured || settings.insecure || isLoopbackListen(settings.listen)) return undefined;
  return (
    `protected mode: refusing to listen on ${settings.listen}, a non-loopback address, with neither TLS nor API keys: ` +
    'add --tls-cert and --tls-key (and --tls-client-ca for client certificates), configure API keys, ' +
    'or pass --insecure if anyone who can reach the port may take, inspect and release any lock'
  );
}
