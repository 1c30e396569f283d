// The signed fence string (clients/conformance/signed-fence.md), as the server writes it:
// v1:<key_id>:<namespace>:<lock>:<token>:<lease_end_ms>:<signature>.
import { sign, type KeyObject } from 'node:crypto';

/** A grant's lease as the engine reports it: it ends no earlier than leaseStart + ttlMs (performance.now()). */
export interface LeaseSpan {
  leaseStart: number;
  ttlMs: number;
}

/** Turns a grant into its wire field: '' when the server has no signing key. `lease` absent: a session-kept lock, no end stated. */
export type SignFence = (name: string, fencingToken: string, lease?: LeaseSpan) => string;

/** The fence of `fencingToken` on `lock` in `namespace`, signed with `privateKey` (Ed25519); leaseEndMs undefined states no end. */
export function fenceString(privateKey: KeyObject, keyId: string, namespace: string, lock: string, fencingToken: string, leaseEndMs?: number): string {
  const end = leaseEndMs === undefined ? '' : String(Math.max(0, Math.floor(leaseEndMs)));
  const body = `v1:${keyId}:${encodeURIComponent(namespace)}:${encodeURIComponent(lock)}:${fencingToken}:${end}`;
  return `${body}:${sign(null, Buffer.from(body), privateKey).toString('base64url')}`;
}
