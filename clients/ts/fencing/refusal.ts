// What a guard answers when it turns a request away, worded as clients/conformance/fencing.json
// `refusal` says, so every language's guard reads the same.
import type { FenceError } from './wire';

/** A stale token: the message of the gRPC FAILED_PRECONDITION status. */
export function staleMessage(lock: string, token: bigint, newest: bigint): string {
  return `stale fencing token for lock ${JSON.stringify(lock)}: ${token} is older than ${newest}, the newest seen`;
}

export function staleBody(lock: string, token: bigint, newest: bigint) {
  return { error: 'stale_fencing_token', lock, token: token.toString(), newest: newest.toString() };
}

/** A missing or malformed fence: the HTTP 400 body. */
export function badFenceBody(err: FenceError) {
  return { error: `${err.kind}_fence`, field: err.field, header: err.header };
}

/** The fence store failed (e.g. its Redis is down): the guard fails closed. */
export const STORE_FAILED_MESSAGE = 'the fence store could not check the fencing token; the request was not let through';

/** What a guard tells its `onRefused` hook, to report a stale holder. */
export interface Refusal {
  lock: string;
  token: bigint;
  newest: bigint;
}
