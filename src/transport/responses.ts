// Engine results as wire fields, shared by the unary and the streaming handlers.
import type { Grant, HolderInfo } from '../engine/types';
import type { LeaseSpan, SignFence } from '../fencing/fence';

export function grantFields(grant: Grant, signedFence: string) {
  return { token: grant.token, fencingToken: grant.fencingToken, ttlMs: String(grant.ttlMs), holdCount: grant.holdCount, signedFence };
}

/** A grant's signed fence (src/fencing), '' without a signing key; `lease` absent: a session keeps the lock, no end is stated. */
export function fenceOf(sign: SignFence | undefined, name: string, fencingToken: string, lease?: LeaseSpan): string {
  return sign ? sign(name, fencingToken, lease) : '';
}

/** A holder as a Holder message: never a token. */
export function holderFields(holder: HolderInfo) {
  const { owner, fencingToken, holdCount, mode, value } = holder;
  return { owner, fencingToken, ttlMs: String(holder.ttlMs), holdCount, mode, value };
}
