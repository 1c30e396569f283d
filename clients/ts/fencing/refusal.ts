// What a guard answers when it turns a request away, worded as clients/conformance/signed-fence.md
// (and fencing.json for the stale token) say, so every language's guard reads the same: an HTTP
// status and a JSON body with `error`, `message` and the fields of the table, or a gRPC status with
// the same message. A fence, a signature or a token value beyond what the table lists is never echoed.
import { status } from '@grpc/grpc-js';
import type { FenceError } from './wire';

export type RefusalError =
  | 'missing_fence'
  | 'malformed_fence'
  | 'signed_fence_required'
  | 'unknown_fence_key'
  | 'bad_fence_signature'
  | 'fence_for_another_namespace'
  | 'fence_for_another_lock'
  | 'fence_lease_ended'
  | 'stale_fencing_token'
  | 'fence_store_unavailable';

const STATUS: Record<RefusalError, [http: number, grpc: status]> = {
  missing_fence: [400, status.INVALID_ARGUMENT],
  malformed_fence: [400, status.INVALID_ARGUMENT],
  signed_fence_required: [403, status.PERMISSION_DENIED],
  unknown_fence_key: [403, status.PERMISSION_DENIED],
  bad_fence_signature: [403, status.PERMISSION_DENIED],
  fence_for_another_namespace: [403, status.PERMISSION_DENIED],
  fence_for_another_lock: [403, status.PERMISSION_DENIED],
  fence_lease_ended: [409, status.FAILED_PRECONDITION],
  stale_fencing_token: [409, status.FAILED_PRECONDITION],
  fence_store_unavailable: [503, status.UNAVAILABLE],
};

const quote = JSON.stringify;

/** A request the guard refuses: its HTTP status and body, its gRPC status and message. */
export class FenceRefusal extends Error {
  constructor(
    readonly error: RefusalError,
    /** The body's other fields (decimal strings for tokens and times). */
    readonly fields: Record<string, string>,
    message: string,
  ) {
    super(message);
    this.name = 'FenceRefusal';
  }

  get httpStatus(): number {
    return STATUS[this.error][0];
  }

  get grpcCode(): status {
    return STATUS[this.error][1];
  }

  /** The HTTP body: `error`, `message` and the fields. */
  body(): Record<string, string> {
    return { error: this.error, message: this.message, ...this.fields };
  }

  static badFence(err: FenceError): FenceRefusal {
    return new FenceRefusal(`${err.kind}_fence`, { field: err.field, header: err.header }, err.message);
  }

  static signedRequired(header: string): FenceRefusal {
    return new FenceRefusal('signed_fence_required', { header }, `this resource requires a signed fence (header ${header})`);
  }

  static unknownKey(keyId: string): FenceRefusal {
    return new FenceRefusal('unknown_fence_key', { key_id: keyId }, `fence signed by unknown key ${quote(keyId)}`);
  }

  static badSignature(keyId: string): FenceRefusal {
    return new FenceRefusal('bad_fence_signature', { key_id: keyId }, `fence signature does not verify with key ${quote(keyId)}`);
  }

  static anotherNamespace(namespace: string, expected: string): FenceRefusal {
    return new FenceRefusal(
      'fence_for_another_namespace',
      { namespace, expected },
      `fence for namespace ${quote(namespace)} refused: this resource is protected in namespace ${quote(expected)}`,
    );
  }

  static anotherLock(lock: string, expected: string): FenceRefusal {
    return new FenceRefusal(
      'fence_for_another_lock',
      { lock, expected },
      `fence for lock ${quote(lock)} refused: this resource is protected by lock ${quote(expected)}`,
    );
  }

  static leaseEnded(lock: string, token: bigint, leaseEndMs: bigint, nowMs: bigint, skewMs: bigint): FenceRefusal {
    return new FenceRefusal(
      'fence_lease_ended',
      { lock, token: `${token}`, lease_end_ms: `${leaseEndMs}`, now_ms: `${nowMs}`, skew_ms: `${skewMs}` },
      `fence for lock ${quote(lock)} (token ${token}) refused: its lease ended at ${leaseEndMs}, now is ${nowMs} (skew allowance ${skewMs} ms)`,
    );
  }

  static stale(lock: string, token: bigint, newest: bigint): FenceRefusal {
    return new FenceRefusal('stale_fencing_token', { lock, token: `${token}`, newest: `${newest}` }, staleMessage(lock, token, newest));
  }

  static storeUnavailable(lock: string, cause: string): FenceRefusal {
    return new FenceRefusal('fence_store_unavailable', { lock }, `fence store unavailable for lock ${quote(lock)}: ${cause}`);
  }
}

/** A stale token: the message of the gRPC FAILED_PRECONDITION status and of the HTTP 409 body. */
export function staleMessage(lock: string, token: bigint, newest: bigint): string {
  return `stale fencing token for lock ${quote(lock)}: ${token} is older than ${newest}, the newest seen`;
}

/** The HTTP 409 body of a stale token. */
export function staleBody(lock: string, token: bigint, newest: bigint): Record<string, string> {
  return FenceRefusal.stale(lock, token, newest).body();
}

/** A missing or malformed fence: the HTTP 400 body. */
export function badFenceBody(err: FenceError): Record<string, string> {
  return FenceRefusal.badFence(err).body();
}

/** What a guard tells its `onRefused` hook, to report a stale holder. */
export interface Refusal {
  lock: string;
  token: bigint;
  newest: bigint;
}
