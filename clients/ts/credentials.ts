// How the SDK reaches a server that wants TLS, a client certificate or an API key.
import { credentials, InterceptingCall, type ChannelCredentials, type ClientOptions, type Interceptor } from '@grpc/grpc-js';

export interface ClientTls {
  /** PEM CA to verify the server's certificate with; omitted: the system's CAs. */
  ca?: Buffer;
  /** Mutual TLS: this client's PEM certificate (chain) and its private key. */
  cert?: Buffer;
  key?: Buffer;
  /** The name to expect in the server's certificate when it differs from the address's host. */
  serverName?: string;
}

export interface ConnectionSecurity {
  /** Connect with TLS; omitted: plaintext. */
  tls?: ClientTls;
  /** Sent on every call as the metadata `authorization: Bearer <apiKey>`. */
  apiKey?: string;
}

/**
 * Adds the key to each call's metadata. An interceptor rather than call credentials: grpc-js
 * refuses those on a plaintext channel, and a server on loopback may use keys without TLS.
 */
function bearer(apiKey: string): Interceptor {
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set('authorization', `Bearer ${apiKey}`);
        next(metadata, listener);
      },
    });
}

/** The channel credentials and options that `security` calls for, added to `options`. */
export function secureChannel(
  security: ConnectionSecurity,
  options: Partial<ClientOptions> = {},
): { creds: ChannelCredentials; options: Partial<ClientOptions> } {
  const { tls, apiKey } = security;
  const creds = tls ? credentials.createSsl(tls.ca ?? null, tls.key ?? null, tls.cert ?? null) : credentials.createInsecure();
  const withName = tls?.serverName ? { 'grpc.ssl_target_name_override': tls.serverName, 'grpc.default_authority': tls.serverName } : {};
  const interceptors = apiKey ? [...(options.interceptors ?? []), bearer(apiKey)] : options.interceptors;
  return { creds, options: { ...withName, ...options, ...(interceptors ? { interceptors } : {}) } };
}
