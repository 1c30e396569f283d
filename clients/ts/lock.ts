// A grant from the unary Acquire: nothing renews it; it lasts ttlMs unless renewed or released.
import type { AcquireResponse } from './gen/holdfast/v1/lock';
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

  constructor(
    private readonly rpc: UnaryCalls,
    readonly name: string,
    grant: AcquireResponse,
  ) {
    this.token = grant.token;
    this.fencingToken = BigInt(grant.fencingToken);
    this.ttlMs = Number(grant.ttlMs);
    this.holdCount = grant.holdCount;
  }

  /** Releases one hold; rejects with NOT_FOUND when the grant is gone (expired or released). */
  async release(): Promise<ReleaseResult> {
    const { released, holdCount } = await this.rpc.release({ name: this.name, token: this.token });
    return { released, holdCount };
  }

  /** Extends the lease to `ttlMs` from now (0: the grant's own lease length); resolves with the lease left in ms. */
  async renew(ttlMs = 0): Promise<number> {
    const res = await this.rpc.renew({ name: this.name, token: this.token, ttlMs: int64Field('ttlMs', ttlMs) });
    return Number(res.ttlMs);
  }
}
