// Several locks at once, all or nothing (AcquireSet, HoldSet, ReleaseSet). The server takes the
// names in one canonical order, so overlapping sets asked for in any order never deadlock.
import type { ClientReadableStream, Metadata } from '@grpc/grpc-js';
import type {
  AcquireSetRequest,
  AcquireSetResponse,
  HoldAcquired,
  HoldResponse,
  HoldSetAcquired,
  HoldSetRequest,
  LockServiceClient,
  SetMember,
} from '../../gen/holdfast/v1/lock';
import { countedFrom, toEpochMs, type LeaseClock } from './deadline';
import { NotAcquiredError } from './errors';
import { attachFenceHeaders, attachFenceMetadata, type HeaderTarget } from './fencing/attach';
import { openStream, sessionLease } from './hold';
import { Lease } from './lease';
import { int64Field, lockFields, type AcquireOptions, type HoldOptions } from './options';
import type { UnaryCalls } from './rpc';
import type { SessionConnection } from './session';
import type { ResetBudget } from './streams';

export interface SetMemberInfo {
  name: string;
  /** The member's own fencing token. */
  fencingToken: bigint;
  /** The member's secret token (releases and renews it like an Acquire's). */
  token: string;
  /** The member's lease in ms when the set was complete. */
  ttlMs: number;
  holdId: string;
  /**
   * The member's signed fence (a HoldSet's: its latest renewal's); undefined when the server signs
   * none. A bearer credential like `token`: never log it.
   */
  signedFence?: string;
}

function memberInfo(m: SetMember): SetMemberInfo {
  const info: SetMemberInfo = { name: m.name, fencingToken: BigInt(m.fencingToken), token: m.token, ttlMs: Number(m.ttlMs), holdId: m.holdId };
  if (m.signedFence) info.signedFence = m.signedFence;
  return info;
}

function memberOf(members: SetMemberInfo[], name: string): SetMemberInfo {
  const member = members.find((m) => m.name === name);
  if (!member) throw new RangeError(`"${name}" is not a member of this set`);
  return member;
}

/** Adds member `name`'s fence (its signed fence too, when it has one) to `headers`. */
function fenceMember<T extends HeaderTarget>(members: SetMemberInfo[], headers: T, name: string): T {
  const member = memberOf(members, name);
  return attachFenceHeaders(headers, name, member.fencingToken, member.signedFence);
}

function fenceMemberMetadata(members: SetMemberInfo[], name: string, metadata?: Metadata): Metadata {
  const member = memberOf(members, name);
  return attachFenceMetadata(name, member.fencingToken, metadata, member.signedFence);
}

function releaseAll(rpc: UnaryCalls, members: { name: string; token: string; holdId: string }[]) {
  return rpc.releaseSet({ members: members.map(({ name, token, holdId }) => ({ name, token, holdId })) });
}

/** A set taken with AcquireSet: nothing renews it; release() gives back every member. */
export class LockSet {
  /** The members, in the server's canonical order. */
  readonly members: SetMemberInfo[];
  /** The conservative end of the earliest member's lease (epoch ms). */
  readonly expiresAt: number;

  constructor(
    private readonly rpc: UnaryCalls,
    members: SetMember[],
    /** Counts the grant's times from the AcquireSet's send time (countedFrom), or from its session's anchors. */
    clock: LeaseClock,
    leaseStartedAfterMs: number,
  ) {
    this.members = members.map(memberInfo);
    this.expiresAt = toEpochMs(clock(leaseStartedAfterMs, Math.min(...this.members.map((m) => m.ttlMs))));
  }

  /** The fencing token of one member. */
  fencingToken(name: string): bigint {
    return memberOf(this.members, name).fencingToken;
  }

  /** Adds member `name`'s fence to `headers` and returns them. */
  fenceMember<T extends HeaderTarget>(headers: T, name: string): T {
    return fenceMember(this.members, headers, name);
  }

  /** Member `name`'s fence as gRPC metadata (added to `metadata` when given). */
  fenceMemberMetadata(name: string, metadata?: Metadata): Metadata {
    return fenceMemberMetadata(this.members, name, metadata);
  }

  /** Releases every member; resolves with the names whose token held nothing any more. */
  async release(): Promise<string[]> {
    return (await releaseAll(this.rpc, this.members)).notHeld;
  }
}

/** A set kept by a HoldSet stream: `signal` aborts when any member is (or may be) lost. */
export class LeaseSet extends Lease {
  /** The members, in the server's canonical order. */
  readonly members: SetMemberInfo[];

  /** `clock` counts the set's times: from the HoldSet's send time (countedFrom), or from its session's anchors. */
  constructor(call: Pick<ClientReadableStream<HoldResponse>, 'cancel'>, rpc: UnaryCalls, acquired: HoldSetAcquired, clock: LeaseClock, reset: () => void) {
    const members = acquired.members.map(memberInfo);
    // The set's lease is its earliest member's; the server reports renewals of that one.
    const first = members[0];
    const asOne: HoldAcquired = {
      token: first.token,
      holdId: first.holdId,
      fencingToken: String(first.fencingToken),
      ttlMs: String(Math.min(...members.map((m) => m.ttlMs))),
      holdCount: 1,
      leaseStartedAfterMs: acquired.leaseStartedAfterMs,
      signedFence: '',
    };
    super(call, rpc, members.map((m) => m.name).join(','), asOne, clock, reset);
    this.members = members;
  }

  /** The fencing token of one member. */
  memberFencingToken(name: string): bigint {
    return memberOf(this.members, name).fencingToken;
  }

  /** A set holds several locks, each with its own token: fence with one member's (fenceMember). */
  override fence(_headers?: HeaderTarget): never {
    throw new RangeError('a LeaseSet holds several locks: use fenceMember(headers, name) or fenceMemberMetadata(name)');
  }

  override fenceMetadata(_metadata?: Metadata): never {
    return this.fence();
  }

  /** Adds member `name`'s fence (Holdfast-Fence too, when the server signs fences) to `headers` and returns them. */
  fenceMember<T extends HeaderTarget>(headers: T, name: string): T {
    return fenceMember(this.members, headers, name);
  }

  /** Member `name`'s fence as gRPC metadata (added to `metadata` when given). */
  fenceMemberMetadata(name: string, metadata?: Metadata): Metadata {
    return fenceMemberMetadata(this.members, name, metadata);
  }

  /** A HoldSet renewal's fences: one per member, in the canonical order of `members`. */
  protected override renewedFences(fences: string[]): void {
    fences.forEach((fence, i) => {
      if (fence && this.members[i]) this.members[i].signedFence = fence;
    });
  }

  protected override async giveBack(): Promise<void> {
    await releaseAll(this.rpc, this.members);
  }
}

/** An AcquireSet's answer, and how its lease_started_after_ms counts (from its send time, or a session's anchors). */
export type SetGrant = (request: AcquireSetRequest, waitMs: number) => Promise<{ response: AcquireSetResponse; clock: LeaseClock }>;

/** A unary AcquireSet, counted from its send time. */
export function unarySetGrant(rpc: UnaryCalls): SetGrant {
  return async (request, waitMs) => {
    const clock = countedFrom(performance.now());
    return { response: await rpc.acquireSet(request, waitMs), clock };
  };
}

/** `rpc` gives the set back (ReleaseSet); `grant` takes it. */
export async function acquireSet(rpc: UnaryCalls, grant: SetGrant, names: string[], options: AcquireOptions): Promise<LockSet> {
  const { owner, ttlMs, waitTimeoutMs, mode, value } = lockFields('', options);
  const { response, clock } = await grant({ names, owner, ttlMs, waitTimeoutMs, mode, value }, options.waitMs ?? 0);
  if (!response.acquired) throw new NotAcquiredError(names.join(','), options.waitMs ?? 0);
  return new LockSet(rpc, response.members, clock, Number(response.leaseStartedAfterMs));
}

function holdSetRequest(names: string[], options: HoldOptions): HoldSetRequest {
  const { owner, ttlMs, waitTimeoutMs, mode, value } = lockFields('', options);
  return { names, owner, ttlMs, waitTimeoutMs, mode, value, maxHoldMs: int64Field('maxHoldMs', options.maxHoldMs) };
}

/** Holds a set under the client's session: `rpc` gives it back with ReleaseSet over the session. */
export function holdSetOverSession(session: SessionConnection, rpc: UnaryCalls, names: string[], options: HoldOptions): Promise<LeaseSet> {
  const build = (acquired: HoldSetAcquired, clock: LeaseClock, giveBack: () => void) => new LeaseSet({ cancel: giveBack }, rpc, acquired, clock, giveBack);
  return sessionLease(names.join(','), options.waitMs ?? 0, () => session.holdSet(holdSetRequest(names, options), build, options.signal));
}

/** Holds a set with a HoldSet stream of its own. */
export function holdSet(stub: LockServiceClient, rpc: UnaryCalls, names: string[], options: HoldOptions, resets: ResetBudget): Promise<LeaseSet> {
  const request = holdSetRequest(names, options);
  return openStream<HoldSetAcquired>(
    {
      name: names.join(','),
      waitMs: options.waitMs ?? 0,
      start: () => stub.holdSet(request),
      build: (call, acquired, sentAt, reset) => new LeaseSet(call, rpc, acquired, countedFrom(sentAt), reset),
      giveBack: (acquired) => releaseAll(rpc, acquired.members),
    },
    options.signal,
    resets,
  ) as Promise<LeaseSet>;
}
