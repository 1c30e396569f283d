// A lock's holders as the SDK shows them (Inspect, Watch, observe): never a token.
import { LockMode, type Holder } from '../../gen/holdfast/v1/lock';

export type Mode = 'exclusive' | 'shared';

export interface HolderInfo {
  owner: string;
  mode: Mode;
  fencingToken: bigint;
  /** The lease left, in ms. */
  ttlMs: number;
  /** 0 for a holder that vanished: the lock stays closed until its lease has run out. */
  holdCount: number;
  /** The value the holder publishes ('' for none). */
  value: string;
}

export function modeName(mode: LockMode): Mode {
  return mode === LockMode.LOCK_MODE_SHARED ? 'shared' : 'exclusive';
}

export function holderInfo(holder: Holder): HolderInfo {
  const { owner, holdCount, value } = holder;
  return { owner, mode: modeName(holder.mode), fencingToken: BigInt(holder.fencingToken), ttlMs: Number(holder.ttlMs), holdCount, value };
}
