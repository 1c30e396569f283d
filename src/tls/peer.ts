// Who is calling, as mutual TLS proved it: the subject of the client certificate the server
// verified for this call's connection.
import type { PeerCertificate } from 'node:tls';

/** What grpc-js server calls (and intercepted calls) tell of their connection's TLS. */
interface AuthContextCall {
  getAuthContext(): { sslPeerCertificate?: PeerCertificate };
}

export interface ClientCertificateSubject {
  /** The subject's common name (CN), '' when it has none. */
  commonName: string;
  /** The whole subject, in the certificate's order, e.g. 'O=payments,CN=billing-worker'. */
  text: string;
  /** Each attribute's values, e.g. { CN: ['billing-worker'], O: ['payments'] }. */
  attributes: Record<string, string[]>;
}

/**
 * The verified client certificate's subject for a server call or intercepted call, or undefined
 * when the connection has none (plaintext, or TLS without --tls-client-ca).
 */
export function clientCertificateSubject(call: AuthContextCall): ClientCertificateSubject | undefined {
  const subject = call.getAuthContext().sslPeerCertificate?.subject;
  if (!subject) return undefined;
  const attributes: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(subject)) {
    attributes[name] = Array.isArray(value) ? value.map(String) : [String(value)];
  }
  const text = Object.entries(attributes)
    .flatMap(([name, values]) => values.map((v) => `${name}=${v}`))
    .join(',');
  return { commonName: attributes.CN?.[0] ?? '', text, attributes };
}
