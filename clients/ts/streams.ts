// Where this client's Hold streams go, so that cancelling them never costs a connection.
//
// Every call a client cancels is one HTTP/2 RST_STREAM. The server's HTTP/2 stack (nghttp2, as
// Node 20 bundles it) drops a connection that sends more than 1 000 of them in a burst, then
// more than 33 a second (its guard against rapid-reset attacks, CVE-2023-44487), and with it
// every call on that connection, granted Holds included. So this client:
// - puts at most WAITS_PER_CONNECTION waiting Holds on one connection, opening another when they
//   are all taken: aborting any number of waits at once stays under the burst on each;
// - spends the cancels of each connection from a budget a little under the guard's, and parks
//   the rest until the budget refills (the caller learns at once that its call is over; the
//   server hears of it a little later).
import type { ChannelCredentials, ClientOptions } from '@grpc/grpc-js';
import { LockServiceClient } from '../../gen/holdfast/v1/lock';

/** Waiting Holds per connection: aborting all of them at once uses under half the burst. */
export const WAITS_PER_CONNECTION = 450;
/** Cancels per connection at once, and then per second: under nghttp2's 1 000 and 33. */
export const RESET_BURST = 900;
export const RESETS_PER_SECOND = 30;

export interface Cancellable {
  cancel(): void;
  /** True once the call has ended: a parked cancel is then dropped. */
  ended(): boolean;
}

/** A token bucket of RST_STREAMs for one connection. */
export class ResetBudget {
  private tokens = RESET_BURST;
  private refilledAt = performance.now();
  private readonly parked: Cancellable[] = [];
  private timer?: NodeJS.Timeout;

  /** Cancels `call` now if the budget allows, else as soon as it does (oldest first). */
  cancel(call: Cancellable): void {
    this.refill();
    if (this.parked.length === 0 && this.tokens >= 1) {
      this.tokens -= 1;
      call.cancel();
      return;
    }
    this.parked.push(call);
    this.drainLater();
  }

  private refill(): void {
    const now = performance.now();
    this.tokens = Math.min(RESET_BURST, this.tokens + ((now - this.refilledAt) / 1000) * RESETS_PER_SECOND);
    this.refilledAt = now;
  }

  private drainLater(): void {
    if (this.timer) return;
    const waitMs = Math.max(1, ((1 - this.tokens) / RESETS_PER_SECOND) * 1000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.refill();
      while (this.parked.length > 0 && this.tokens >= 1) {
        const call = this.parked.shift()!;
        if (call.ended()) continue;
        this.tokens -= 1;
        call.cancel();
      }
      if (this.parked.length > 0) this.drainLater();
    }, waitMs);
    this.timer.unref();
  }
}

/** One connection of this client's, with its waiting Holds counted and its cancels budgeted. */
export interface StreamConnection {
  stub: LockServiceClient;
  resets: ResetBudget;
  waits: number;
}

/** The connections Hold streams use; the first is the client's own stub. */
export class StreamConnections {
  private readonly connections: StreamConnection[];

  constructor(
    first: LockServiceClient,
    private readonly open: () => LockServiceClient,
  ) {
    this.connections = [{ stub: first, resets: new ResetBudget(), waits: 0 }];
  }

  /** A connection with room for one more waiting Hold; the caller counts it in and out. */
  forWait(): StreamConnection {
    let connection = this.connections.find((c) => c.waits < WAITS_PER_CONNECTION);
    if (!connection) {
      connection = { stub: this.open(), resets: new ResetBudget(), waits: 0 };
      this.connections.push(connection);
    }
    return connection;
  }

  close(): void {
    for (const { stub } of this.connections) stub.close();
  }
}

/**
 * Its own connection for each stub: grpc-js otherwise shares one connection among clients of
 * the same address and options, and the budgets above are per connection.
 */
export function ownConnection(address: string, creds: ChannelCredentials, options: Partial<ClientOptions> = {}): LockServiceClient {
  return new LockServiceClient(address, creds, { 'grpc.use_local_subchannel_pool': 1, ...options });
}
