// A lease kept by a Hold stream, with a local deadline that does not trust silence or late news.
//
// The server renews the lease and reports each renewal; this side keeps its own conservative idea
// of when the lease ends (deadline.ts), so that `signal` aborts in time even if the network goes
// quiet and no `lost` event can arrive (Chubby's clients keep such a local lease timeout). Each
// confirmation (acquired, renewed) can only move that deadline forward; one whose deadline has
// already passed when it arrives means the lease may be someone else's by now, so it counts as lost.
import { status, type ClientReadableStream, type Metadata, type StatusObject } from '@grpc/grpc-js';
import type { HoldAcquired, HoldResponse } from '../../gen/holdfast/v1/lock';
import { deadlinePassed, laterDeadline, toEpochMs, type LeaseClock } from './deadline';
import { LeaseLostError } from './errors';
import { attachFenceHeaders, attachFenceMetadata, type HeaderTarget } from './fencing/attach';
import type { UnaryCalls } from './rpc';

type State = 'held' | 'lost' | 'released';

export class Lease {
  /** The grant's token; it also works with Release and Renew. */
  readonly token: string;
  /** Names this stream's own hold of the grant (a reentrant grant has one per holder). */
  readonly holdId: string;
  /** The grant's fencing token (uint64 as a bigint, so comparisons are exact). */
  readonly fencingToken: bigint;
  /** The lease length in ms; the server renews about every third of it. */
  readonly ttlMs: number;
  /** How many times this grant is held. */
  readonly holdCount: number;

  private readonly controller = new AbortController();
  private state: State = 'held';
  private deadline = -Infinity; // performance.now() time: the lease ends no earlier than this
  private timer?: NodeJS.Timeout;
  private signed: string;

  /**
   * `clock` turns the server's times into deadlines: counted from performance.now() taken just
   * before the Hold call started, or from a session's anchors. Check `signal` after constructing:
   * a grant that arrived too late is lost from the start.
   */
  constructor(
    /** The Hold stream; only its cancel is used (a lease held under a session passes its own `reset`). */
    private readonly call: Pick<ClientReadableStream<HoldResponse>, 'cancel'>,
    protected readonly rpc: UnaryCalls,
    readonly name: string,
    acquired: HoldAcquired,
    private readonly clock: LeaseClock,
    /** Cancels the stream: its client spends RST_STREAMs from a budget (streams.ts). */
    private readonly reset: () => void = () => call.cancel(),
  ) {
    this.token = acquired.token;
    this.holdId = acquired.holdId;
    this.fencingToken = BigInt(acquired.fencingToken);
    this.ttlMs = Number(acquired.ttlMs);
    this.holdCount = acquired.holdCount;
    this.signed = acquired.signedFence;
    this.checkOnEveryLook(this.controller.signal);
    this.confirmed(Number(acquired.leaseStartedAfterMs), this.ttlMs, 'the grant');
  }

  /**
   * Aborts, with a LeaseLostError as its reason, when the lease is or may be lost. Not on release().
   * Looking at it (`lease.signal`, and `aborted` or `throwIfAborted()` on a signal kept from it)
   * checks the deadline first: a process that was paused past the deadline sees the signal
   * aborted at its first look, before the timer has had a chance to run.
   */
  get signal(): AbortSignal {
    this.checkDeadline();
    return this.controller.signal;
  }

  private checkDeadline(): void {
    if (this.state === 'held' && deadlinePassed(this.deadline, performance.now())) this.lose(this.deadlinePassed());
  }

  /** The timer alone would let code that runs first after a pause see a stale "held". */
  private checkOnEveryLook(signal: AbortSignal): void {
    const lease = this;
    Object.defineProperties(signal, {
      aborted: {
        get() {
          lease.checkDeadline();
          return Reflect.get(AbortSignal.prototype, 'aborted', signal) as boolean;
        },
      },
      throwIfAborted: {
        value() {
          lease.checkDeadline();
          AbortSignal.prototype.throwIfAborted.call(signal);
        },
      },
    });
  }

  /**
   * The conservative end of the lease in epoch ms: the request's send time (or a session's latest
   * usable anchor) + lease_started_after_ms + ttl_ms of the latest confirmation, less the clock drift allowance. `signal` aborts then
   * unless a renewal has moved it.
   */
  get expiresAt(): number {
    return toEpochMs(this.deadline);
  }

  /**
   * Gives back exactly this stream's hold (Release with the token and hold id; the server ends the
   * stream with OK), then cancels the stream. Never rejects; calling it again does nothing.
   */
  async release(): Promise<void> {
    if (this.state !== 'held') {
      this.reset();
      return;
    }
    this.state = 'released';
    clearTimeout(this.timer);
    try {
      await this.giveBack();
    } catch {
      // Lost meanwhile, or the server is unreachable: the cancel below frees the hold on a live
      // connection, and on a dead one the lease runs out.
    } finally {
      this.reset();
    }
  }

  /** Gives back what this stream holds (a set gives back every member). */
  protected async giveBack(): Promise<void> {
    await this.rpc.release({ name: this.name, token: this.token, holdId: this.holdId });
  }

  /** Replaces the value this grant publishes to watchers; rejects with NOT_FOUND once the grant is gone. */
  async setValue(value: string): Promise<void> {
    await this.rpc.setValue({ name: this.name, token: this.token, value });
  }

  /**
   * The grant's signed fence (docs/fencing.md#signed-fences), the latest renewal's: each renewal
   * of a Hold stream brings one stating the renewed lease's end (a lease kept by a session keeps
   * its first, which states no end). Undefined when the server signs none. A bearer credential
   * like `token`: never log it.
   */
  get signedFence(): string | undefined {
    return this.signed || undefined;
  }

  /**
   * Adds this grant's fence (Holdfast-Fence-Lock, Holdfast-Fence-Token, and Holdfast-Fence when
   * the server signs fences) to a request's `headers` and returns them; a guarded resource refuses
   * it once a newer grant wrote (docs/fencing.md).
   */
  fence<T extends HeaderTarget>(headers: T): T {
    return attachFenceHeaders(headers, this.name, this.fencingToken, this.signedFence);
  }

  /** Adds this grant's fence to gRPC `metadata` (a new Metadata by default) and returns it. */
  fenceMetadata(metadata?: Metadata): Metadata {
    return attachFenceMetadata(this.name, this.fencingToken, metadata, this.signedFence);
  }

  /** Takes a renewal's fresh signed fences (HoldRenewed.signed_fences: a Hold's one; a set's, one per member). */
  protected renewedFences(fences: string[]): void {
    if (fences[0]) this.signed = fences[0];
  }

  /** Called by the stream for every event after `acquired`. */
  onEvent(event: HoldResponse): void {
    if (event.renewed) {
      this.confirmed(Number(event.renewed.leaseStartedAfterMs), Number(event.renewed.ttlMs), 'a renewal');
      if (this.state === 'held') this.renewedFences(event.renewed.signedFences);
    } else if (event.lost) this.lose(new LeaseLostError(this.name, event.lost.reason, 'server', event.lost.code));
  }

  /** Called by the stream (`the Hold stream`, or `the session` the lease is held under) when it ends, for whatever reason. */
  onEnd(end: StatusObject, stream = 'the Hold stream'): void {
    const how = end.code === status.OK ? 'the server ended it' : `${status[end.code]}: ${end.details}`;
    this.lose(new LeaseLostError(this.name, `${stream} ended (${how})`, 'stream'));
  }

  private confirmed(leaseStartedAfterMs: number, ttlMs: number, what: string): void {
    if (this.state !== 'held') return;
    this.deadline = laterDeadline(this.deadline, this.clock(leaseStartedAfterMs, ttlMs));
    if (deadlinePassed(this.deadline, performance.now())) {
      this.lose(new LeaseLostError(this.name, `${what} arrived after the lease could have ended`, 'deadline'));
      return;
    }
    this.armTimer();
  }

  private armTimer(): void {
    clearTimeout(this.timer);
    const left = this.deadline - performance.now();
    if (left <= 0) {
      this.lose(this.deadlinePassed());
      return;
    }
    // Timers count whole milliseconds and may fire a fraction early: check again when it fires.
    this.timer = setTimeout(() => this.armTimer(), left);
    this.timer.unref();
  }

  private deadlinePassed(): LeaseLostError {
    return new LeaseLostError(this.name, 'no renewal was confirmed before the lease could end', 'deadline');
  }

  private lose(reason: LeaseLostError): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    clearTimeout(this.timer);
    this.reset(); // frees this stream's hold if the server still keeps it and can hear us
    this.controller.abort(reason);
  }
}
