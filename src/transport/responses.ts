// Engine results as wire fields, shared by the unary and the streaming handlers.
import type { Grant } from '../engine/types';

export function grantFields(grant: Grant) {
  return { token: grant.token, fencingToken: grant.fencingToken, ttlMs: String(grant.ttlMs), holdCount: grant.holdCount };
}
