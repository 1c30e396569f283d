// The store's requests as the lock functions take them (their ARGV, in the order each lua/ file's
// header lists), and their replies as the store's answers. Pure: no connection, no Redis.
import { NotRenewed, ReleaseCode, ScriptCode, ScriptFlag } from '../engine/errors';
import type {
  AcquireAnswer,
  AcquireRequest,
  ClaimAnswer,
  ClaimEntry,
  ClaimRequest,
  GrantRecord,
  HandOff,
  LockRecord,
  NotRenewedReason,
  Refusal,
  ReleaseAnswer,
  ReleaseRequest,
  RenewAnswer,
  RenewRequest,
  WaitEdge,
  WaitRecord,
} from '../engine/store';
import type { FenceCheck, HolderInfo, Mode } from '../engine/types';

export type Reply = (string | number | Reply)[];
type Args = (string | number)[];

/** lua/acquire-4.lua's ARGV. */
export function acquireArgs(r: AcquireRequest): Args {
  const args: Args = [r.token, r.owner, r.ttlMs, r.mode, r.limit, r.requestId, r.waiterId, r.entryLeaseMs, r.holdId, r.maxWaiters, r.value];
  if (r.waitAs && !r.owner) args.push(r.waitAs);
  return args;
}

/** {1, token, fence, leaseLeft, holdCount} from `offset`. */
function grantAt(reply: Reply, offset: number): GrantRecord {
  return { token: String(reply[offset]), fencingToken: String(reply[offset + 1]), ttlMs: Number(reply[offset + 2]), holdCount: Number(reply[offset + 3]) };
}

/** The refusals acquire-4 and claim-4 answer with (-3 to -6). */
function refusalOf(reply: Reply): Refusal {
  switch (reply[0]) {
    case ScriptCode.REQUEST_ID_REUSED:
      return { why: 'request_id_reused' };
    case ScriptCode.TOO_MANY_WAITERS:
      return { why: 'too_many_waiters', maxWaiters: Number(reply[1]) };
    case ScriptCode.LIMIT_MISMATCH:
      return { why: 'limit_mismatch', limit: Number(reply[1]) };
    default:
      return { why: 'upgrade' };
  }
}

export function acquireAnswer(reply: Reply, confirmed: boolean): AcquireAnswer {
  switch (reply[0]) {
    case ScriptCode.GRANTED:
      return { outcome: 'granted', grant: grantAt(reply, 1), confirmed };
    case ScriptCode.NOT_GRANTED:
      return { outcome: 'not_granted', nextExpiryMs: Number(reply[1]) };
    case ScriptCode.QUEUED:
      return { outcome: 'queued', nextExpiryMs: Number(reply[1]) };
    default:
      return { outcome: 'refused', refusal: refusalOf(reply) };
  }
}

/** lua/release-4.lua's ARGV. */
export function releaseArgs(r: ReleaseRequest): Args {
  return [r.token, r.holdId, r.vanished ? 1 : 0, r.lockDelayMs, r.vanishedLeaseMs ?? '', r.handOffTo, r.why];
}

/** {code, holdCount, holdId[, {waiter id, token, fence, lease ms, hold count, hold id}...]} or {-1}. */
export function releaseAnswer(reply: Reply, confirmed: boolean): ReleaseAnswer {
  if (reply[0] === ScriptCode.NOT_FOUND) return { held: false };
  const served = Array.isArray(reply[3]) ? (reply[3] as Reply[]) : [];
  const handedOff = served.map((entry): HandOff => ({ waiterId: String(entry[0]), grant: grantAt(entry, 1), holdId: String(entry[5]) }));
  return { held: true, freed: reply[0] === ReleaseCode.FREED, holdCount: Number(reply[1]), holdId: String(reply[2]), handedOff, confirmed };
}

/** lua/renew-3.lua's ARGV: the hold id only when a Hold stream renews its own hold, '1' when the fence is asked for. */
export function renewArgs(r: RenewRequest): Args {
  if (r.withFence) return [r.token, r.ttlMs, r.holdId ?? '', 1];
  return r.holdId === undefined ? [r.token, r.ttlMs] : [r.token, r.ttlMs, r.holdId];
}

const NOT_RENEWED: Record<number, NotRenewedReason> = {
  [NotRenewed.EXPIRED]: 'expired',
  [NotRenewed.TAKEN]: 'taken',
  [NotRenewed.HOLD_RELEASED]: 'hold_released',
};

/** renew-3's {code, value[, fence]}, or one lease's two entries of renew-batch-3's flat reply. */
export function renewAnswer(code: number, value: number, confirmed: boolean, fence?: unknown): RenewAnswer {
  if (code === ScriptCode.NOT_FOUND) return { renewed: false, why: NOT_RENEWED[value] ?? 'expired' };
  return fence === undefined ? { renewed: true, leftMs: value, confirmed } : { renewed: true, leftMs: value, confirmed, fencingToken: String(fence) };
}

/** lua/renew-batch-3.lua's ARGV for `requests` (their keys go three each, in the same order). */
export function renewBatchArgs(requests: RenewRequest[]): Args {
  const args: Args = new Array(requests.length * 3);
  for (let i = 0, at = 0; i < requests.length; i++, at += 3) {
    const r = requests[i];
    args[at] = r.token;
    args[at + 1] = r.ttlMs;
    args[at + 2] = r.holdId ?? '';
  }
  return args;
}

/** lua/claim-4.lua's ARGV. */
export function claimArgs(r: ClaimRequest): Args {
  return [r.entryLeaseMs, ...r.waiterIds];
}

/** {msToNextExpiry, {result per waiter}}. */
export function claimAnswer(reply: Reply, confirmed: boolean): ClaimAnswer {
  const waiters = (reply[1] as Reply[]).map((result): ClaimEntry => {
    if (result[0] === ScriptCode.GRANTED) return { outcome: 'granted', grant: grantAt(result, 1) };
    if (result[0] === ScriptCode.QUEUED) return { outcome: 'queued' };
    if (result[0] === ScriptCode.UPGRADE_REFUSED) return { outcome: 'refused', refusal: refusalOf(result) };
    if (result[0] === ScriptCode.DEADLOCK) return { outcome: 'aborted', message: String(result[1]) };
    return { outcome: 'gone' };
  });
  return { nextExpiryMs: Number(reply[0]), waiters, confirmed };
}

/** {lastFence, limit, waiters, {owner, fence, ttlLeft, holdCount, mode, value}...}. */
export function lockRecord(reply: Reply): LockRecord {
  const holders = (reply.slice(3) as Reply[]).map(
    (h): HolderInfo => ({
      owner: String(h[0]),
      fencingToken: String(h[1]),
      ttlMs: Number(h[2]),
      holdCount: Number(h[3]),
      mode: Number(h[4]) as Mode,
      value: String(h[5] ?? ''),
    }),
  );
  return { fencingToken: String(reply[0]), limit: Number(reply[1]), waiters: Number(reply[2]), holders };
}

/** {live, ttlLeft, mode, lastFence}. */
export function fenceCheck(reply: Reply): FenceCheck {
  return { live: reply[0] === ScriptFlag.YES, ttlMs: Number(reply[1]), mode: Number(reply[2]) as Mode | 0, latestFencingToken: String(reply[3]) };
}

/** {1, fence} or {-1}. */
export function setValueAnswer(reply: Reply): { fencingToken: string } | null {
  return reply[0] === ScriptCode.NOT_FOUND ? null : { fencingToken: String(reply[1]) };
}

/** waits-of-1's {{waiter id, lock name, since}...}. */
export function waitRecords(reply: Reply): WaitRecord[] {
  return (reply as Reply[]).map((r) => ({ waiterId: String(r[0]), name: String(r[1]), since: Number(r[2]) }));
}

/** wait-edge-3's {waiting, holder owner...}. */
export function waitEdge(reply: Reply): WaitEdge {
  return { waiting: reply[0] === ScriptFlag.YES, queuedAt: Number(reply[1] ?? 0), holders: reply.slice(2).map(String) };
}
