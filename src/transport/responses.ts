// Engine results as wire fields, shared by the unary and the streaming handlers.
import type { Grant, HolderInfo } from '../engine/types';

export function grantFields(grant: Grant) {
  return { token: grant.token, fencingToken: grant.fencingToken, ttlMs: String(grant.ttlMs), holdCount: grant.holdCount, signedFence: '' };
}

/** A holder as a Holder message: never a token. */
export function holderFields(holder: HolderInfo) {
  const { owner, fencingToken, holdCount, mode, value } = holder;
  return { owner, fencingToken, ttlMs: String(holder.ttlMs), holdCount, mode, value };
}
