// Says in words why a connection to the server failed. grpc-js reports it as UNAVAILABLE with
// details such as "No connection established. Last error: Protocol error (<time>). Resolution
// note: " that name neither the address nor the likely cause; an interceptor rewrites those
// details (so the ServiceError's message too) into one line. Errors the server itself returns are
// left as they are.
import { InterceptingCall, status, type Interceptor } from '@grpc/grpc-js';

export interface ConnectionKind {
  /** The channel uses TLS. */
  tls: boolean;
  /** It presents a client certificate (mutual TLS). */
  clientCert: boolean;
}

/** How the details of a connection that could not be made begin. */
export const CANNOT_REACH = 'cannot reach holdfast at ';

/** The details grpc-js gives when no connection could be made (not a status from the server). */
const NO_CONNECTION = /^(No connection established|Name resolution failed)/;

type Cause = [RegExp, string | ((kind: ConnectionKind) => string)];

const CAUSES: Cause[] = [
  [/ECONNREFUSED/, 'connection refused: nothing listens on that port'],
  [/Name resolution failed|ENOTFOUND|EAI_AGAIN/, 'the host name does not resolve'],
  [
    /Protocol error/,
    "it does not speak gRPC: is that an HTTP port (holdfast's --http-listen, for the dashboard and /metrics) instead of the gRPC --listen port?",
  ],
  [/wrong version number|packet length too long|http request/i, 'it speaks plaintext, and this client asked for TLS'],
  [
    /certificate required|bad certificate|unknown ca|alert handshake failure/i,
    'the server wants a client certificate it trusts (mutual TLS): give tls.cert and tls.key (--tls-cert and --tls-key)',
  ],
  [/altnames|does not match certificate/i, 'its TLS certificate is not for that host name: give the name it carries as tls.serverName (--tls-server-name)'],
  [
    /unable to verify|self[- ]signed|unable to get (local )?issuer|certificate has expired|not yet valid/i,
    'its TLS certificate is not trusted: give the CA that signed it as tls.ca (--tls-ca)',
  ],
  [/ETIMEDOUT|EHOSTUNREACH|ENETUNREACH/, 'no answer from that address (unreachable or timed out)'],
  [
    /Failed to connect|Connection dropped|ECONNRESET|socket hang up/,
    (kind) =>
      !kind.tls
        ? 'the server closed the connection at once: does it want TLS (the tls option; --tls or --tls-ca)?'
        : kind.clientCert
          ? 'the server ended the TLS handshake: does it trust this client certificate?'
          : 'the server ended the TLS handshake: does it want a client certificate (mutual TLS)?',
  ],
];

/** grpc-js's "Last error" text, without its timestamp and the empty resolution note. */
function lastError(details: string): string {
  const found = /Last error: ([\s\S]*?)(?: \(\d{4}-\d\d-\d\dT[^)]*\))?\.? Resolution note:/.exec(details);
  return (found?.[1] ?? details).replace(/\s+/g, ' ').trim();
}

/** One line naming `address` and why no connection was made, or undefined for other details. */
export function explainConnectionFailure(details: string, address: string, kind: ConnectionKind): string | undefined {
  if (!NO_CONNECTION.test(details)) return undefined;
  const cause = CAUSES.find(([pattern]) => pattern.test(details))?.[1];
  const words = typeof cause === 'function' ? cause(kind) : (cause ?? lastError(details));
  return `${CANNOT_REACH}${address}: ${words}`;
}

/** An interceptor that rewrites connection failures' details with explainConnectionFailure. */
export function explainConnectionErrors(address: string, kind: ConnectionKind): Interceptor {
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        next(metadata, {
          onReceiveStatus(received, forward) {
            const details = received.code === status.UNAVAILABLE ? explainConnectionFailure(received.details, address, kind) : undefined;
            forward(details ? { ...received, details } : received);
          },
        });
      },
    });
}
