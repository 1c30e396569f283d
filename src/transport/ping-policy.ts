// The minimum interval between a client's HTTP/2 pings, as gRPC's C core and Go servers enforce it
// (grpc.http2.min_ping_interval_without_data_ms, max_ping_strikes): grpc-js 1.14 has no such
// option. A ping that comes sooner than the interval after the previous one, with nothing sent
// by the server in between, is a strike; one strike more than allowed closes the connection with
// GOAWAY ENHANCE_YOUR_CALM "too_many_pings" (what gRPC clients understand: they back off their
// keepalive). Pings that follow responses are never strikes: gRPC Go and C clients ping after
// data to size their flow-control windows.
import { constants, type Http2Session } from 'node:http2';
import type { Server } from '@grpc/grpc-js';
import type { ConnectionState } from './limits';

export interface PingPolicy {
  minPingIntervalMs: number;
  maxPingStrikes: number;
  /** The connection's state (the limits interceptor marks what was sent on it). */
  connection(session: Http2Session): ConnectionState;
  /** Called once per connection closed for its pings. */
  onTooManyPings?(session: Http2Session): void;
}

/** How long a connection told to go away may finish what is in flight before it is cut. */
const GOAWAY_GRACE_MS = 1000;

/**
 * Applies `policy` to every connection `server` accepts from now on. grpc-js keeps its HTTP/2
 * servers private (`http2Servers`, filled by bindAsync): call this after binding. Throws when
 * they are not found, so that a grpc-js upgrade that moves them fails at start-up, not silently.
 */
export function enforcePingPolicy(server: Server, policy: PingPolicy): void {
  const http2Servers = (server as unknown as { http2Servers?: Map<{ on(event: 'session', cb: (s: Http2Session) => void): void }, unknown> }).http2Servers;
  if (!(http2Servers instanceof Map) || http2Servers.size === 0)
    throw new Error('enforcePingPolicy: grpc-js no longer keeps its HTTP/2 servers where holdfast looks (Server.http2Servers)');
  for (const http2Server of http2Servers.keys()) http2Server.on('session', (session) => watchPings(session, policy));
}

function watchPings(session: Http2Session, policy: PingPolicy): void {
  const connection = policy.connection(session);
  let lastPingAt = -Infinity;
  let strikes = 0;
  session.on('ping', () => {
    const now = performance.now();
    if (connection.sentSincePing) strikes = 0;
    else if (now - lastPingAt < policy.minPingIntervalMs) strikes++;
    connection.sentSincePing = false;
    lastPingAt = now;
    if (strikes <= policy.maxPingStrikes || session.destroyed) return;
    policy.onTooManyPings?.(session);
    session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM, 0, Buffer.from('too_many_pings'));
    setTimeout(() => session.destroy(), GOAWAY_GRACE_MS).unref();
  });
}
