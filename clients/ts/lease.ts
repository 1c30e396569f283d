// A lease kept by a Hold stream, with a local deadline that does not trust silence.
//
// The server renews the lease and reports each renewal; this side keeps its own conservative idea
// of when the lease ends, so that `signal` aborts in time even if the network goes quiet and no
// `lost` event can arrive (Chubby's clients keep such a local lease timeout).
//
// When a confirmation (acquired or renewed: "lease left L ms") arrives at time A, the lease is
// taken to have been granted or renewed at max(S, A - ttl/3), where S is when the Hold request
// was sent: a grant never predates its request, and a confirmation is assumed to be at most a
// third of a lease old when it arrives (the server renews every third of a lease, so an older one
// is already overdue). The last known expiry is that moment + L; the signal aborts a safety margin
// before it, like the server's own watchdog does.
import { status, type ClientReadableStream, type StatusObject } from '@grpc/grpc-js';
import type { HoldAcquired, HoldResponse } from './gen/holdfast/v1/lock';
import { LeaseLostError } from './errors';
import type { UnaryCalls } from './rpc';

/** The oldest a confirmation is assumed to be when it arrives, as a fraction of the lease. */
const CONFIRMATION_AGE = 1 / 3;

/** The signal aborts this long before the last known expiry (the server's watchdog uses the same). */
export function safetyMargin(ttlMs: number): number {
  return Math.min(1000, Math.max(5, ttlMs / 10));
}

type State = 'held' | 'lost' | 'released';

export class Lease {
  /** The grant's token; it also works with Release and Renew. */
  readonly token: string;
  /** The grant's fencing token (uint64 as a bigint, so comparisons are exact). */
  readonly fencingToken: bigint;
  /** The lease length in ms; the server renews about every third of it. */
  readonly ttlMs: number;
  /** How many times this grant is held. */
  readonly holdCount: number;
  /** Aborts, with a LeaseLostError as its reason, when the lease is or may be lost. Not on release(). */
  readonly signal: AbortSignal;

  private readonly controller = new AbortController();
  private state: State = 'held';
  private expiry = 0; // performance.now() time of the last known expiry
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly call: ClientReadableStream<HoldResponse>,
    private readonly rpc: UnaryCalls,
    readonly name: string,
    acquired: HoldAcquired,
    private readonly sentAt: number,
  ) {
    this.token = acquired.token;
    this.fencingToken = BigInt(acquired.fencingToken);
    this.ttlMs = Number(acquired.ttlMs);
    this.holdCount = acquired.holdCount;
    this.signal = this.controller.signal;
    this.confirmed(this.ttlMs);
  }

  /** The last known expiry, in epoch ms, counted conservatively (see the top of this file). */
  get expiresAt(): number {
    return Date.now() + (this.expiry - performance.now());
  }

  /**
   * Gives the lock back: a unary Release with the token, then cancels the stream (which releases
   * it too if the Release did not get through). Never rejects; calling it again does nothing.
   */
  async release(): Promise<void> {
    if (this.state !== 'held') {
      this.call.cancel();
      return;
    }
    this.state = 'released';
    clearTimeout(this.timer);
    try {
      await this.rpc.release({ name: this.name, token: this.token });
    } catch {
      // Lost meanwhile, or the server is unreachable: cancelling the stream covers both.
    } finally {
      this.call.cancel();
    }
  }

  /** Called by the stream for every event after `acquired`. */
  onEvent(event: HoldResponse): void {
    if (event.renewed) this.confirmed(Number(event.renewed.ttlMs));
    else if (event.lost) this.lose(new LeaseLostError(this.name, event.lost.reason, 'server', event.lost.code));
  }

  /** Called by the stream when it ends, for whatever reason. */
  onEnd(end: StatusObject): void {
    const how = end.code === status.OK ? 'the server ended it' : `${status[end.code]}: ${end.details}`;
    this.lose(new LeaseLostError(this.name, `the Hold stream ended (${how})`, 'stream'));
  }

  private confirmed(leftMs: number): void {
    if (this.state !== 'held') return;
    const now = performance.now();
    this.expiry = Math.max(this.sentAt, now - this.ttlMs * CONFIRMATION_AGE) + leftMs;
    const abortIn = this.expiry - safetyMargin(this.ttlMs) - now;
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () => this.lose(new LeaseLostError(this.name, 'no renewal was confirmed before the lease would end', 'deadline')),
      Math.max(0, abortIn),
    );
    this.timer.unref();
  }

  private lose(reason: LeaseLostError): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    clearTimeout(this.timer);
    this.call.cancel(); // the server releases whatever it still holds for us
    this.controller.abort(reason);
  }
}
