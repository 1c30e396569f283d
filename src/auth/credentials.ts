// Who a caller is: the API keys and client certificate subjects of the config file, each mapped
// to one namespace and one role. One immutable set at a time: a reload builds a new one.
import type { ApiKeyEntry, ClientCertificateEntry, Role } from '../config/schema';
import type { ClientCertificateSubject } from '../tls/peer';
import { hashApiKey, matchApiKey } from './api-keys';

export interface Principal {
  /** The entry's name, for logs and messages (never the key). */
  name: string;
  namespace: string;
  role: Role;
}

/** What a caller presented: the SHA-256 of its key (the key itself is not kept), or its certificate's subject. */
export type Presented = { keyHash: Buffer } | { subject: ClientCertificateSubject };

export class Credentials {
  private readonly keyHashes: Buffer[];

  constructor(
    private readonly apiKeys: readonly ApiKeyEntry[] = [],
    private readonly certificates: readonly ClientCertificateEntry[] = [],
  ) {
    this.keyHashes = apiKeys.map((k) => Buffer.from(k.sha256, 'hex'));
  }

  /** Whether any credential is configured (authentication is then required). */
  get configured(): boolean {
    return this.apiKeys.length + this.certificates.length > 0;
  }

  /** Whom `presented` is now, or undefined. */
  principalOf(presented: Presented): Principal | undefined {
    if ('keyHash' in presented) {
      const i = matchApiKey(presented.keyHash, this.keyHashes);
      return i < 0 ? undefined : principal(this.apiKeys[i]);
    }
    const entry = this.certificates.find((c) => Object.entries(c.subject).every(([name, value]) => presented.subject.attributes[name]?.includes(value)));
    return entry && principal(entry);
  }
}

function principal(entry: ApiKeyEntry | ClientCertificateEntry): Principal {
  return { name: entry.name, namespace: entry.namespace, role: entry.role };
}

/** The SHA-256 of a presented key, as Credentials matches it. */
export function presentedKey(key: string): Presented {
  return { keyHash: Buffer.from(hashApiKey(key), 'hex') };
}
