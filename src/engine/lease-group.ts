// A lease group: grants the engine keeps together. A Hold is a group of one, a HoldSet a group
// of N, a Session one open group that its locks join (each `hold` a set of one, each `hold_set` a
// set of N) and leave. The group
// - takes its holds as a Hold or HoldSet takes them (waiting, in canonical order for a set,
//   lock-set.ts) and has the watchdog renew them in its batches (watchdog.ts);
// - reports one earliest confirmed lease end per renewal round trip, and only when it moved
//   forward (earliest-end.ts): every member's lease ends no earlier than that;
// - ends a set at its first loss: one report names the member, and the set's other members leave
//   the group, given back at once on the holder's word (a member released with its token),
//   otherwise once their leases have run out;
// - applies the end rule when whatever holds the group ends (end()): on the holder's word every
//   hold is given back now; on a passed call deadline after the clocks' drift wait; otherwise each
//   is kept until the lease its holder was told of has run out.
import { deadlineEndWaitMs } from './clock-drift';
import { EarliestEnd } from './earliest-end';
import { LockError } from './errors';
import { acquireSet, giveBack, type LockCalls, type SetMemberGrant } from './lock-set';
import { randomId } from './random-ids';
import type { AcquireParams, LostReason } from './types';
import type { HeldLease, LeaseListener, Watchdog } from './watchdog';

/** Names one hold of a grant (not a secret: the token is). */
function newHoldId(): string {
  return randomId(9);
}

/** A member of a group: a kept lease, tagged with the set it was taken in. */
export type GroupLease = HeldLease<LeaseSet>;

/** The holds one Hold, HoldSet, `hold` or `hold_set` took: the first one lost ends them all. */
export class LeaseSet {
  /** Set once, as the set joins: an array of its exact size (one pushed to grows to 17 slots). */
  members: readonly GroupLease[] = [];
  /** Lost, dropped or ended with its group: its members are no longer the group's. */
  over = false;

  constructor(
    /** The caller's name for it (a session: the op_id of the operation that took it). */
    readonly tag: string,
    /** Taken as a set: a loss report names the member lost ('lock "…": why'). */
    readonly named: boolean,
  ) {}
}

/** The group's earliest confirmed lease end: every member's lease ends no earlier than leaseStart + ttlMs. */
export interface GroupEnd {
  ttlMs: number;
  /** performance.now() when the renewal (or grant) that ends first was sent. */
  leaseStart: number;
  /** Members kept now. */
  members: number;
}

export interface GroupEvents {
  /** The earliest end moved forward; at most once per renewal round trip. */
  renewed(end: GroupEnd): void;
  /**
   * `member` was lost (or released with its token: 'released'), so `set` is over: its other
   * members have left the group and are being given back. Once per set.
   */
  lost(set: LeaseSet, member: GroupLease, reason: LostReason, message: string): void;
}

export interface GroupOptions {
  /** How long a lock stays closed after a vanished holder's lease has run out. */
  lockDelayMs: number;
}

/** What a Hold or HoldSet asks for, read from its request. */
export interface HoldAsk {
  /** Every member's parameters; waitMs already bounded by the caller's deadline. */
  params: Omit<AcquireParams, 'name' | 'holdId'>;
  /** The wait the request asked for, as its time-out error states it. */
  askedWaitMs: number;
  /** The longest the holds are kept (0: no cap): no lease outlives it. */
  maxHoldMs: number;
  /** Free the locks at once however the group ends. */
  releaseOnDisconnect: boolean;
  /** LeaseSet.tag. */
  tag?: string;
}

/** A set taken and kept, with its grants as they were made (for the answer that tells them). */
export interface HeldSet {
  set: LeaseSet;
  grants: SetMemberGrant[];
}

/** How whatever held the group ended, for the end rule. */
export interface StreamEnd {
  /** The holder's own word: a cancel from a live client, a close. */
  byHolder: boolean;
  /** The call ended at its deadline, set this long after the client sent its request; absent: it did not. */
  deadlineCallMs?: number;
}

/** What end() did: gave every hold back now, will after the drift wait, or left them to their leases. */
export type EndRule = 'given_back' | 'after_deadline' | 'kept';

const isKept = (lease: GroupLease) => !lease.ended;

export class LeaseGroup implements LeaseListener<LeaseSet> {
  private readonly members = new Set<GroupLease>();
  private readonly ends = new EarliestEnd<GroupLease>();
  /** The end last reported, lowered by each member that joined since (its holder counts it from its grant). */
  private told = Infinity;
  private over = false;
  private flushQueued = false;

  constructor(
    private readonly calls: LockCalls,
    private readonly watchdog: Watchdog,
    private readonly events: GroupEvents,
    private readonly options: GroupOptions,
  ) {}

  /** Members kept now. */
  get size(): number {
    return this.members.size;
  }

  /**
   * Takes `name` as a Hold does and keeps it as a set of one. Resolves null when `signal`
   * aborted (nothing is left held); throws LockError('timeout') when it was not granted in time.
   */
  async hold(name: string, ask: HoldAsk, signal: AbortSignal): Promise<HeldSet | null> {
    const params = { ...leaseParams(ask), name, holdId: newHoldId() };
    const grant = await this.calls.acquire(params, signal);
    const grants = grant && [{ name, grant, holdId: params.holdId }];
    return this.join(grants, ask, signal, false, () => `lock "${name}" was not acquired within ${ask.askedWaitMs} ms`);
  }

  /** Takes every name as a HoldSet does (canonical order, all or nothing) and keeps them as one set; as hold(). */
  async holdSet(names: string[], ask: HoldAsk, signal: AbortSignal): Promise<HeldSet | null> {
    const grants = await acquireSet(this.calls, names, leaseParams(ask), signal, newHoldId);
    return this.join(grants, ask, signal, true, () => `the set of ${names.length} locks was not acquired within ${ask.askedWaitMs} ms`);
  }

  private async join(grants: SetMemberGrant[] | null, ask: HoldAsk, signal: AbortSignal, named: boolean, timeout: () => string): Promise<HeldSet | null> {
    if (signal.aborted || this.over) {
      if (grants) await giveBack(this.calls, grants); // the holder left while they were on their way
      return null;
    }
    if (!grants) throw new LockError('timeout', timeout());
    const set = new LeaseSet(ask.tag ?? '', named);
    const { ttlMs } = leaseParams(ask);
    set.members = grants.map(({ name, grant, holdId }) => {
      const { token, fencingToken } = grant;
      const request = {
        name,
        token,
        holdId,
        fencingToken,
        ttlMs,
        maxHoldMs: ask.maxHoldMs,
        lockDelayMs: this.options.lockDelayMs,
        releaseOnDisconnect: ask.releaseOnDisconnect,
      };
      const lease = this.watchdog.keep(request, this, set, grant.leaseStart, grant.ttlMs);
      this.members.add(lease);
      this.ends.push(lease);
      // Until a report covers it, its holder counts this member from its grant: a later end equal
      // to the one reported before must still be reported.
      this.told = Math.min(this.told, lease.start + lease.leftMs);
      return lease;
    });
    return { set, grants };
  }

  /** Takes `set` out of the group and gives its holds back now: a grant whose answer nobody saw. */
  async drop(set: LeaseSet): Promise<void> {
    if (set.over) return;
    set.over = true;
    for (const member of set.members) this.members.delete(member);
    this.queueFlush();
    await Promise.all(set.members.map((member) => member.letGo()));
  }

  /**
   * The end rule, applied to every member: the holder's word gives them back now, a passed
   * deadline after the drift wait, anything else leaves them until their leases have run out.
   * Nothing is reported after it.
   */
  end(how: StreamEnd): { rule: EndRule; members: GroupLease[] } {
    const members = [...this.members];
    this.over = true;
    this.members.clear();
    this.ends.clear();
    if (how.byHolder) {
      for (const member of members) void member.letGo();
      return { rule: 'given_back', members };
    }
    if (how.deadlineCallMs !== undefined) {
      setTimeout(() => members.forEach((member) => void member.letGo()), deadlineEndWaitMs(how.deadlineCallMs));
      return { rule: 'after_deadline', members };
    }
    for (const member of members) void member.abandon();
    return { rule: 'kept', members };
  }

  renewed(lease: GroupLease): void {
    if (!this.over && !lease.tag.over) this.ends.push(lease);
  }

  settled(): void {
    this.flush();
  }

  lost(lease: GroupLease, reason: LostReason, message: string): void {
    const set = lease.tag;
    this.members.delete(lease);
    if (set.over || this.over) return;
    set.over = true;
    // Released with its token: the holder's own word, so the rest go at once too.
    const byHolder = reason === 'released';
    for (const other of set.members) {
      if (other === lease) continue;
      this.members.delete(other);
      void (byHolder ? other.letGo() : other.abandon());
    }
    if (this.members.size > 0) this.queueFlush(); // the others' earliest end may move forward
    this.events.lost(set, lease, reason, set.named ? `lock "${lease.name}": ${message}` : message);
  }

  private queueFlush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    // After whatever else this turn changes: one report.
    setImmediate(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.over) return;
    const earliest = this.ends.earliest(isKept);
    if (!earliest) return;
    const end = earliest.start + earliest.leftMs;
    if (end <= this.told) return;
    this.told = end;
    this.events.renewed({ ttlMs: earliest.leftMs, leaseStart: earliest.start, members: this.members.size });
  }

  /** Entries in the earliest-end heap, stale ones included (tests: it must not grow with renewals). */
  get heapSize(): number {
    return this.ends.size;
  }
}

/** The parameters every member is taken with: no lease outlives the hold's cap, so the lock is free when max hold ends it. */
function leaseParams(ask: HoldAsk): Omit<AcquireParams, 'name' | 'holdId'> {
  const { params, maxHoldMs } = ask;
  return maxHoldMs > 0 && params.ttlMs > maxHoldMs ? { ...params, ttlMs: maxHoldMs } : params;
}
