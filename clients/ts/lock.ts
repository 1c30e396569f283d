// A grant from the unary Acquire: nothing renews it; it lasts ttlMs unless renewed or released.
import type { Metadata } from '@grpc/grpc-js';
import type { AcquireResponse } from '../../gen/holdfast/v1/lock';
import { attachFenceHeaders, attachFenceMetadata, type HeaderTarget } from './fencing/attach';
import { laterDeadline, leaseDeadline, toEpochMs, type LeaseClock } from './deadline';
import { int64Field } from './options';
import type { UnaryCalls } from './rpc';

export interface ReleaseResult {
  /** True when the grant was freed (its hold count reached zero). */
  released: boolean;
  /** The holds left on the grant. */
  holdCount: number;
}

export class Lock {
  /** The secret token that releases and renews this grant. */
  readonly token: string;
  /**
   * Strictly greater than every earlier grant's fencing token for this name. A bigint (uint64 on
   * the wire), so comparisons are exact; `String(fencingToken)` gives the decimal form.
   */
  readonly fencingToken: bigint;
  /** The lease length in ms. */
  readonly ttlMs: number;
  /** How many times this grant is held (reentrancy). */
  readonly holdCount: number;

  private deadline: number; // performance.now() time: the lease ends no earlier than this
  private signed: string;

  /** `clock` counts the grant's times from the Acquire's send time (countedFrom), or from its session's anchors. */
  constructor(
    private readonly rpc: UnaryCalls,
    readonly name: string,
    grant: AcquireResponse,
    clock: LeaseClock,
  ) {
    this.token = grant.token;
    this.fencingToken = BigInt(grant.fencingToken);
    this.ttlMs = Number(grant.ttlMs);
    this.holdCount = grant.holdCount;
    this.signed = grant.signedFence;
    // The grant's lease started after the request was sent, however late the answer came.
    this.deadline = clock(Number(grant.leaseStartedAfterMs), this.ttlMs);
  }

  /**
   * The conservative end of the lease in epoch ms: when the last Acquire or Renew was sent, plus
   * the lease it reported, less the clock drift allowance. Nothing tells you when it passes.
   */
  get expiresAt(): number {
    return toEpochMs(this.deadline);
  }

  /** Releases one hold; rejects with NOT_FOUND when the grant is gone (expired or released). */
  async release(): Promise<ReleaseResult> {
    const { released, holdCount } = await this.rpc.release({ name: this.name, token: this.token, holdId: '' });
    return { released, holdCount };
  }

  /** Replaces the value this grant publishes to watchers; rejects with NOT_FOUND once the grant is gone. */
  async setValue(value: string): Promise<void> {
    await this.rpc.setValue({ name: this.name, token: this.token, value });
  }

  /**
   * The grant's signed fence (docs/fencing.md#signed-fences), the latest Renew's once renewed;
   * undefined when the server signs none. A bearer credential like `token`: never log it.
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

  /** Extends the lease to `ttlMs` from now (0: the grant's own lease length); resolves with the lease left in ms. */
  async renew(ttlMs = 0): Promise<number> {
    const sentAt = performance.now();
    const res = await this.rpc.renew({ name: this.name, token: this.token, ttlMs: int64Field('ttlMs', ttlMs) });
    const leftMs = Number(res.ttlMs);
    if (res.signedFence) this.signed = res.signedFence;
    this.deadline = laterDeadline(this.deadline, leaseDeadline(sentAt, 0, leftMs));
    return leftMs;
  }
}
