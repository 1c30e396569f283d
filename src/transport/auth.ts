// Authentication and authorization at the transport boundary: one server interceptor, outermost,
// so that no handler (and no limit) sees a call that has no right to run. A caller is known by its
// API key (metadata `authorization: Bearer <key>`) or, without one, by its client certificate
// (mutual TLS). Missing or unknown: UNAUTHENTICATED; a role without the right: PERMISSION_DENIED.
// Open calls are remembered with what their caller presented, so that a reload of the
// credentials ends exactly the calls it takes the right from, and no other.
import { Metadata, ServerInterceptingCall, status, type ServerInterceptingCallInterface, type ServerInterceptor } from '@grpc/grpc-js';
import { type Credentials, presentedKey, type Presented, type Principal } from '../auth/credentials';
import { needsCredentials, roleAllows } from '../auth/roles';
import { DEFAULT_NAMESPACE } from '../engine/keys';
import { clientCertificateSubject } from '../tls/peer';

/** Without authentication every call is the default namespace's, with every right. */
const EVERYONE: Principal = { name: '', namespace: DEFAULT_NAMESPACE, role: 'admin' };

/** Longer than any key `holdfast hash-key --generate` makes, by far; longer ones are not hashed. */
const MAX_KEY_LENGTH = 1024;

interface Verdict {
  principal?: Principal;
  presented?: Presented;
  code?: status;
  details?: string;
}

interface OpenCall {
  path: string;
  presented: Presented;
  principal: Principal;
  end(code: status, details: string): void;
}

function method(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function who(principal: Principal, presented: Presented): string {
  return `${'keyHash' in presented ? 'API key' : 'client certificate'} "${principal.name}" (role ${principal.role}, namespace ${principal.namespace})`;
}

export class AuthGate {
  private credentials: Credentials;
  /** Whether credentials are required: fixed at start, so a reload that empties the file closes the server rather than opening it. */
  readonly required: boolean;
  private readonly principals = new WeakMap<Metadata, { principal: Principal; presented: Presented }>();
  private readonly open = new Set<OpenCall>();

  constructor(credentials: Credentials) {
    this.credentials = credentials;
    this.required = credentials.configured;
  }

  /**
   * Whom an API key belongs to now, for callers outside gRPC (the dashboard); undefined when the
   * key is missing or unknown. Without authentication: everyone, in the default namespace.
   */
  principalOfKey(key: string | undefined): Principal | undefined {
    if (!this.required) return EVERYONE;
    if (!key || key.length > MAX_KEY_LENGTH) return undefined;
    return this.credentials.principalOf(presentedKey(key));
  }

  /** The caller's namespace, for a call that passed the gate (the default namespace without authentication). */
  namespaceOf(metadata: Metadata): string {
    return (this.principals.get(metadata)?.principal ?? EVERYONE).namespace;
  }

  /**
   * Why one operation of a stream that passed the gate (a Session's) may not run, as its unary
   * RPC at `path` would be refused, with the credentials as they are now; undefined when it may.
   */
  opRefusal(metadata: Metadata, path: string): { code: status; details: string } | undefined {
    const caller = this.principals.get(metadata);
    if (!this.required || !caller) return undefined;
    const now = this.credentials.principalOf(caller.presented);
    if (!now || now.namespace !== caller.principal.namespace)
      return { code: status.UNAUTHENTICATED, details: `${who(caller.principal, caller.presented)} was revoked` };
    if (!roleAllows(now.role, path)) return { code: status.PERMISSION_DENIED, details: `${who(now, caller.presented)} may not call ${method(path)}` };
    return undefined;
  }

  /**
   * Takes a new set of credentials. Open calls whose caller it no longer knows end with
   * UNAUTHENTICATED, those whose caller lost the right (another role or namespace) with
   * PERMISSION_DENIED; every other call goes on. Returns how many were ended.
   */
  update(credentials: Credentials): number {
    this.credentials = credentials;
    let ended = 0;
    for (const call of [...this.open]) {
      const now = credentials.principalOf(call.presented);
      if (now && now.namespace === call.principal.namespace && roleAllows(now.role, call.path)) continue;
      ended++;
      if (!now) call.end(status.UNAUTHENTICATED, `${who(call.principal, call.presented)} was revoked`);
      else call.end(status.PERMISSION_DENIED, `${who(now, call.presented)} may no longer call ${method(call.path)} in namespace ${call.principal.namespace}`);
    }
    return ended;
  }

  private check(path: string, metadata: Metadata, call: ServerInterceptingCallInterface): Verdict {
    const header = metadata.get('authorization');
    let presented: Presented | undefined;
    if (header.length > 0) {
      const match = header.length === 1 && typeof header[0] === 'string' ? /^Bearer +(\S+)$/i.exec(header[0]) : null;
      if (!match) return { code: status.UNAUTHENTICATED, details: 'the authorization metadata must be "Bearer <API key>"' };
      if (match[1].length > MAX_KEY_LENGTH) return { code: status.UNAUTHENTICATED, details: 'unknown API key' };
      presented = presentedKey(match[1]);
    } else {
      const subject = clientCertificateSubject(call);
      if (!subject) {
        return {
          code: status.UNAUTHENTICATED,
          details: 'this server requires an API key: send the metadata "authorization: Bearer <key>" (or connect with a client certificate it knows)',
        };
      }
      presented = { subject };
    }
    const principal = this.credentials.principalOf(presented);
    if (!principal) {
      const details =
        'keyHash' in presented ? 'unknown API key' : `the client certificate (${presented.subject.text}) is not known to this server, and no API key was sent`;
      return { code: status.UNAUTHENTICATED, details };
    }
    if (!roleAllows(principal.role, path)) return { code: status.PERMISSION_DENIED, details: `${who(principal, presented)} may not call ${method(path)}` };
    return { principal, presented };
  }

  readonly interceptor: ServerInterceptor = (definition, call: ServerInterceptingCallInterface) => {
    const path = definition.path;
    if (!this.required || !needsCredentials(path)) return new ServerInterceptingCall(call);
    let refused = false;
    let open: OpenCall | undefined;
    const close = () => {
      if (open) this.open.delete(open);
    };
    const intercepting: ServerInterceptingCall = new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, nextMetadata) => {
            const verdict = this.check(path, metadata, call);
            if (!verdict.principal) {
              refused = true;
              intercepting.sendStatus({ code: verdict.code!, details: verdict.details!, metadata: new Metadata() });
              return;
            }
            this.principals.set(metadata, { principal: verdict.principal, presented: verdict.presented! });
            open = {
              path,
              presented: verdict.presented!,
              principal: verdict.principal,
              end: (code, details) => intercepting.sendStatus({ code, details, metadata: new Metadata() }),
            };
            this.open.add(open);
            nextMetadata(metadata);
          },
          onReceiveMessage: (message, nextMessage) => {
            if (!refused) nextMessage(message);
          },
          onReceiveHalfClose: (nextHalfClose) => {
            if (!refused) nextHalfClose();
          },
          onCancel: close,
        }),
      sendStatus: (statusObject, next) => {
        close();
        next(statusObject);
      },
    });
    return intercepting;
  };
}
