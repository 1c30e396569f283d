// The gRPC server's TLS credentials: a certificate and key (and, for mutual TLS, the CA that
// client certificates must chain to), re-read when their files change. grpc-js swaps the new
// pair into its listening sockets (setSecureContext): connections already open keep the
// certificate they were made with, so open Hold streams are not dropped.
import { createSecureContext } from 'node:tls';
import { experimental, type ServerCredentials } from '@grpc/grpc-js';
import { readOptionFile, TlsFilesError } from './option-file';

export interface ServerTlsFiles {
  certFile: string;
  keyFile: string;
  /** Mutual TLS: every client must present a certificate that chains to this CA. */
  clientCaFile?: string;
}

export interface ServerTls {
  credentials: ServerCredentials;
  /** True with a client CA: each call then carries a verified client certificate. */
  mutual: boolean;
}

interface TlsPem {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
}

function readPem(files: ServerTlsFiles): TlsPem {
  const pem: TlsPem = { cert: readOptionFile('--tls-cert', files.certFile), key: readOptionFile('--tls-key', files.keyFile) };
  if (files.clientCaFile) pem.ca = readOptionFile('--tls-client-ca', files.clientCaFile);
  try {
    createSecureContext(pem); // a key that does not match its certificate, or PEM that does not parse
  } catch (err) {
    throw new TlsFilesError(`--tls-cert/--tls-key${files.clientCaFile ? '/--tls-client-ca' : ''}: ${(err as Error).message}`);
  }
  return pem;
}

const samePem = (a: TlsPem, b: TlsPem) => a.cert.equals(b.cert) && a.key.equals(b.key) && (a.ca ?? Buffer.alloc(0)).equals(b.ca ?? Buffer.alloc(0));

/**
 * Why not grpc-js's FileWatcherCertificateProvider: on a read that fails, or a certificate
 * written before its key, it hands grpc-js nothing (or a pair that does not match), and the
 * server then drops every new connection until the next read. This one reads all files, checks
 * that they make a valid context, and only then replaces the last good set; a bad set is
 * reported once and the old certificate stays in service.
 */
class ReloadingCertificates implements experimental.CertificateProvider {
  private readonly identityListeners = new Set<experimental.IdentityCertificateUpdateListener>();
  private readonly caListeners = new Set<experimental.CaCertificateUpdateListener>();
  private timer?: NodeJS.Timeout;
  private lastProblem = '';

  constructor(
    private readonly files: ServerTlsFiles,
    private current: TlsPem,
    private readonly checkEveryMs: number,
    private readonly events: ServerTlsEvents,
  ) {}

  private check(): void {
    let next: TlsPem;
    try {
      next = readPem(this.files);
    } catch (err) {
      const problem = (err as Error).message;
      if (problem !== this.lastProblem) this.events.onReloadFailed?.(problem);
      this.lastProblem = problem;
      return;
    }
    this.lastProblem = '';
    if (samePem(next, this.current)) return;
    this.current = next;
    for (const listener of this.identityListeners) listener(this.identity());
    for (const listener of this.caListeners) listener(this.ca());
    this.events.onReloaded?.();
  }

  private identity(): experimental.IdentityCertificateUpdate {
    return { certificate: this.current.cert, privateKey: this.current.key };
  }

  private ca(): experimental.CaCertificateUpdate | null {
    return this.current.ca ? { caCertificate: this.current.ca } : null;
  }

  // grpc-js adds its listeners while it listens and removes them when its sockets close.
  private watch(): void {
    this.timer ??= setInterval(() => this.check(), this.checkEveryMs).unref();
  }

  private unwatchIfUnused(): void {
    if (this.identityListeners.size + this.caListeners.size > 0 || !this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  addIdentityCertificateListener(listener: experimental.IdentityCertificateUpdateListener): void {
    this.identityListeners.add(listener);
    this.watch();
    process.nextTick(listener, this.identity());
  }

  removeIdentityCertificateListener(listener: experimental.IdentityCertificateUpdateListener): void {
    this.identityListeners.delete(listener);
    this.unwatchIfUnused();
  }

  addCaCertificateListener(listener: experimental.CaCertificateUpdateListener): void {
    this.caListeners.add(listener);
    this.watch();
    process.nextTick(listener, this.ca());
  }

  removeCaCertificateListener(listener: experimental.CaCertificateUpdateListener): void {
    this.caListeners.delete(listener);
    this.unwatchIfUnused();
  }
}

export interface ServerTlsEvents {
  onReloaded?: () => void;
  /** A changed file that cannot be used yet (half-written, mismatched); the old set stays. */
  onReloadFailed?: (problem: string) => void;
}

/**
 * Reads the files now (throwing TlsFilesError naming the option when one is unusable) and
 * returns credentials that check them for change every `checkEveryMs`.
 */
export function serverTls(files: ServerTlsFiles, checkEveryMs: number, events: ServerTlsEvents = {}): ServerTls {
  const certificates = new ReloadingCertificates(files, readPem(files), checkEveryMs, events);
  const mutual = !!files.clientCaFile;
  // grpc-js takes the identity provider first, then the CA provider (its .d.ts names them the other way round).
  const credentials = experimental.createCertificateProviderServerCredentials(certificates, mutual ? certificates : null, mutual);
  return { credentials, mutual };
}
