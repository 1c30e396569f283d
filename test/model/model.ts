// A reference model of one lock's state as the Lua scripts keep it (lua/*.lua, lua/includes/state.lua),
// written from the rules in the README ("Waiting", "Lock kinds", "Hold", "How the state is kept
// in Redis"). lua-model.test.ts runs random command sequences against both and compares them.
//
// The model keeps what Redis keeps (grants, the queue, waiter, owner and request records, the last
// fence, the limit), in plain maps. Where the README's rules and lua/ differ today, `LuaGaps` switches the model
// to what lua/ does, so the suite stays green while each difference is named (see the README,
// "Checked by models"). Time is an input: each step runs at the `now` the script read.

export const EXCLUSIVE = 1;
export const SHARED = 2;
export type Mode = typeof EXCLUSIVE | typeof SHARED;

/** Known differences between the README's rules and lua/ today; true makes the model do what lua/ does. */
export interface LuaGaps {
  /**
   * An expired grant that still lists a request id deletes that id's record even when the record
   * names a newer grant (the id was reused after the old grant became unusable).
   */
  requestIdForgottenByOldGrant: boolean;
  /**
   * Scripts that serve the queue and then return early (acquire refusing or replaying, release of
   * a token that holds nothing) skip keepKeys: a holders key they re-created has no TTL.
   */
  keysLeftWithoutTtl: boolean;
  /**
   * dequeue-4 gives back a served waiter's unnamed hold without checking it is still there: after a
   * Release without hold id took that hold, it takes another (a count goes below zero), and can
   * free a grant that a Hold stream still holds.
   */
  holdCountBelowZero: boolean;
  /**
   * acquire-4 writes when a waiter was queued (Redis TIME, ms, for the deadlock walk's youngest
   * wait) into the waiter record's `t`, which is its lease ms (instead of a field of its own, `q`):
   * a queued waiter is then served with a lease of that many ms (decades), its grant renews by
   * that much, and its request id's record keeps it as the lease asked.
   */
  waiterLeaseIsQueueTime: boolean;
}

/** All four found by these tests and mended in lua/; the switches stay for the next difference found. */
export const LUA_TODAY: LuaGaps = { requestIdForgottenByOldGrant: false, keysLeftWithoutTtl: false, holdCountBelowZero: false, waiterLeaseIsQueueTime: false };
export const README_RULES: LuaGaps = {
  requestIdForgottenByOldGrant: false,
  keysLeftWithoutTtl: false,
  holdCountBelowZero: false,
  waiterLeaseIsQueueTime: false,
};

/** Deliberately wrong variants, for the negative control: the comparison must catch them. */
export type Mutant = 'none' | 'releaseIgnoresHoldCount' | 'queueServesNewestFirst' | 'handOffGetsClaimLease' | 'abortDoesNotServe';

export interface ModelOptions {
  gaps: LuaGaps;
  mutant: Mutant;
}

/** What acquire-4 is asked (and a waiter record keeps). */
export interface Request {
  owner: string;
  mode: Mode;
  limit: number;
  ttl: number;
  rid: string;
  holdId: string;
}

interface Grant {
  owner: string;
  fence: string;
  exclusive: number;
  shared: number;
  leaseMs: number;
  rids: string[];
  abandoned: boolean;
  /** Hold streams' holds, oldest first. */
  holds: { mode: Mode; id: string }[];
  /** Closed at least until then: leases of vanished Hold streams (plus lock delay); 0 for none. */
  keepUntil: number;
  expiry: number;
  /** The strongest mode a vanished Hold stream held it in (0: none); its client may believe that until keepUntil. */
  vanishedMode: 0 | Mode;
}

interface Waiter extends Request {
  token: string;
  entryExpiry: number;
  entryLease: number;
  /** 0 queued, 1 granted (token), 2 refused (owner holds shared, asked exclusive), 3 aborted (a deadlock). */
  state: 0 | 1 | 2 | 3;
  /** With state 3: what its call is answered with. */
  message?: string;
  /** When it was queued (the script's `now`), which a deadlock walk reads to find the youngest wait. */
  queuedAt?: number;
}

interface RequestRecord {
  token: string;
  owner: string;
  mode: Mode;
  limit: number;
  ttl: number;
}

export interface LockState {
  grants: Map<string, Grant>;
  owners: Map<string, string>;
  requests: Map<string, RequestRecord>;
  /** Waiter ids in arrival order, with their arrival numbers. */
  queue: { id: string; seq: number }[];
  waiters: Map<string, Waiter>;
  fence: string | null;
  limit: number | null;
  seq: number | null;
}

/** One script run: the time it read, where new fences come from, and what it published. */
export interface StepContext {
  now: number;
  /** The fence the real script gave `token` (the model cannot know Redis TIME in µs); checked by the caller. */
  fenceFor(token: string, last: string | null): string;
  published: string[];
}

export type Reply = (string | number | Reply)[];

export function emptyState(): LockState {
  return { grants: new Map(), owners: new Map(), requests: new Map(), queue: [], waiters: new Map(), fence: null, limit: null, seq: null };
}

export function cloneState(state: LockState): LockState {
  return structuredClone(state);
}

const RETAIN_MS = 60_000;

export class LockModel {
  constructor(
    readonly state: LockState,
    private readonly ctx: StepContext,
    private readonly options: ModelOptions,
  ) {}

  private get now(): number {
    return this.ctx.now;
  }

  // ---- the operations, one per script -------------------------------------------------------

  acquire(token: string, request: Request, waiterId: string, entryLease: number): Reply {
    const s = this.state;
    this.settle();
    if (request.rid !== '') {
      const prior = s.requests.get(request.rid);
      if (prior) {
        if (prior.owner !== request.owner || prior.mode !== request.mode || prior.limit !== request.limit || prior.ttl !== request.ttl) {
          return [-5];
        }
        const grant = this.live(prior.token);
        if (grant) return this.grantReply(prior.token, grant);
      }
    }
    const busy = s.grants.size > 0 || s.queue.length > 0;
    if (busy && s.limit !== null && s.limit !== request.limit) return [-3, s.limit];
    if (request.owner !== '') {
      const held = s.owners.get(request.owner);
      const grant = held !== undefined ? this.live(held) : undefined;
      if (held !== undefined && grant) {
        if (!this.reenter(held, grant, request, this.now + request.ttl)) return [-4];
        this.keepKeys();
        return this.grantReply(held, grant);
      }
    }
    if (s.queue.length === 0 && this.fits(request.mode, request.limit)) {
      const grant = this.createGrant(token, request, this.now + request.ttl);
      this.keepKeys();
      this.ctx.published.push(`e granted ${grant.fence}`);
      return this.grantReply(token, grant);
    }
    if (waiterId === '') return [0, this.msToNextExpiry()];
    s.seq = (s.seq ?? 0) + 1;
    s.queue = s.queue.filter((e) => e.id !== waiterId);
    s.queue.push({ id: waiterId, seq: s.seq });
    s.limit = request.limit;
    const queued = this.options.gaps.waiterLeaseIsQueueTime ? { ttl: this.now } : { queuedAt: this.now };
    s.waiters.set(waiterId, { ...request, ...queued, token, entryExpiry: this.now + entryLease, entryLease, state: 0 });
    this.keepKeys();
    return [2, this.msToNextExpiry()];
  }

  /** `server` ('' for none): its own waiters ('<server>.…') are handed the lock in the reply (4th element). */
  release(token: string, holdIdAsked: string, vanished: boolean, lockDelay: number, server = ''): Reply {
    let grant = this.live(token);
    if (grant && holdIdAsked !== '' && !grant.holds.some((h) => h.id === holdIdAsked)) grant = undefined;
    if (!grant) {
      this.settle();
      return [-1];
    }
    let holdId = holdIdAsked;
    // Without a hold id: one taken by Acquire, else the newest Hold stream's.
    if (holdId === '' && this.unnamed(grant, EXCLUSIVE) + this.unnamed(grant, SHARED) === 0) holdId = grant.holds[grant.holds.length - 1].id;
    const vanishedUntil = vanished ? grant.expiry + lockDelay : undefined;
    let left: number;
    if (this.options.mutant === 'releaseIgnoresHoldCount') {
      grant.exclusive = grant.shared = 0;
      grant.holds = [];
      left = this.afterDrop(token, grant);
    } else {
      left = this.dropHold(token, grant, holdId, 0, vanishedUntil);
    }
    // What watchers are told (lua/includes/events.lua).
    if (!vanished) this.ctx.published.push(`e released ${grant.fence}`);
    else if (left === 0) this.ctx.published.push(`e lost:disconnected ${grant.fence}`);
    const handedOff = this.settle(server);
    this.keepKeys();
    const reply: Reply = left === 0 ? [1, 0, holdId] : [0, left, holdId];
    if (handedOff.length > 0) reply.push(handedOff);
    return reply;
  }

  renew(token: string, ttlAsked: number, holdId: string): Reply {
    const grant = this.live(token);
    if (!grant) {
      const liveCount = [...this.state.grants.values()].filter((g) => g.expiry > this.now).length;
      const own = this.state.grants.get(token);
      const othersLive = liveCount - (own && own.expiry > this.now ? 1 : 0);
      return [-1, othersLive > 0 ? 1 : 0];
    }
    if (holdId !== '' && !grant.holds.some((h) => h.id === holdId)) return [-1, 2];
    const ttl = ttlAsked === 0 ? grant.leaseMs : ttlAsked;
    grant.expiry = Math.max(this.now + ttl, grant.expiry);
    return [1, grant.expiry - this.now];
  }

  claim(entryLease: number, waiterIds: string[]): Reply {
    const s = this.state;
    this.settle();
    const results: Reply[] = [];
    for (const id of waiterIds) {
      const waiter = s.waiters.get(id);
      let result: Reply = [-1];
      if (waiter && waiter.state === 0) {
        waiter.entryExpiry = this.now + entryLease;
        result = [2];
      } else if (waiter) {
        s.waiters.delete(id);
        const grant = this.live(waiter.token);
        if (waiter.state === 2) {
          result = [-4];
        } else if (waiter.state === 3) {
          result = [-7, waiter.message!];
        } else if (grant) {
          grant.expiry = Math.max(grant.expiry, this.now + waiter.ttl);
          result = [1, waiter.token, grant.fence, waiter.ttl, grant.exclusive + grant.shared];
        }
      }
      results.push(result);
    }
    this.keepKeys();
    return [this.msToNextExpiry(), results];
  }

  dequeue(waiterId: string): number {
    const s = this.state;
    const waiter = s.waiters.get(waiterId);
    let dropped = 0;
    if (waiter) {
      this.dropWaiter(waiterId);
      const grant = waiter.state === 1 ? this.live(waiter.token) : undefined;
      if (grant && (waiter.holdId === '' || grant.holds.some((h) => h.id === waiter.holdId))) {
        this.dropHold(waiter.token, grant, waiter.holdId, waiter.mode);
        this.ctx.published.push(`e released ${grant.fence}`);
        dropped = 1;
      }
    }
    this.settle();
    this.keepKeys();
    return dropped;
  }

  /**
   * Deadlock detection ends a wait (abort-wait-4): only one that still waits (live entry, not
   * served, queued). Its record says aborted, with the message claim answers it with; it leaves
   * the queue, whose next waiters may fit now; its server is told as for a grant, watchers by 'x'.
   */
  abortWait(waiterId: string, message: string): number {
    const s = this.state;
    const waiter = s.waiters.get(waiterId);
    if (!waiter || waiter.entryExpiry <= this.now || waiter.state !== 0 || !s.queue.some((e) => e.id === waiterId)) return 0;
    waiter.state = 3;
    waiter.message = message;
    s.queue = s.queue.filter((e) => e.id !== waiterId);
    this.ctx.published.push(`g ${waiterId}`, `x ${message}`);
    // The mutant still drops expired holders: what it leaves out is serving the queue.
    if (this.options.mutant === 'abortDoesNotServe') this.purgeExpired();
    else this.settle();
    this.keepKeys();
    return 1;
  }

  /** Holders (lease left, hold count 0 when abandoned, mode), live waiters, last fence, limit; no tokens. */
  inspect(): Reply {
    const reply: Reply = [this.state.fence ?? '0', 0, 0];
    for (const [, g] of this.holdersByExpiry()) {
      reply.push([g.owner, g.fence, g.expiry - this.now, g.abandoned ? 0 : g.exclusive + g.shared, modeOf(g, this.now), '']);
    }
    reply[2] = this.state.queue.filter((e) => (this.state.waiters.get(e.id)?.entryExpiry ?? 0) > this.now).length;
    if (reply.length > 3 || reply[2] > 0) reply[1] = this.state.limit ?? 0;
    return reply;
  }

  checkFencingToken(fence: string): Reply {
    const last = this.state.fence ?? '0';
    for (const [, g] of this.holdersByExpiry()) {
      if (g.fence === fence && !g.abandoned) return [1, g.expiry - this.now, modeOf(g, this.now), last];
    }
    return [0, 0, 0, last];
  }

  /** Unexpired holders in the order Redis lists them: by lease end, then token. */
  private holdersByExpiry(): [string, Grant][] {
    return [...this.state.grants].filter(([, g]) => g.expiry > this.now).sort(([ta, a], [tb, b]) => a.expiry - b.expiry || (ta < tb ? -1 : ta > tb ? 1 : 0));
  }

  // ---- the rules ------------------------------------------------------------------------------

  /** A grant its holder can still use: unexpired and not kept closed for a vanished Hold stream. */
  private live(token: string): Grant | undefined {
    const grant = this.state.grants.get(token);
    if (!grant || grant.expiry <= this.now || grant.abandoned) return undefined;
    return grant;
  }

  private grantReply(token: string, grant: Grant): Reply {
    return [1, token, grant.fence, grant.expiry - this.now, grant.exclusive + grant.shared];
  }

  private settle(handOffTo = ''): Reply[] {
    this.purgeExpired();
    return this.serveQueue(handOffTo);
  }

  private purgeExpired(): void {
    for (const [token, grant] of [...this.state.grants]) if (grant.expiry <= this.now) this.forget(token);
  }

  private forget(token: string): void {
    const s = this.state;
    const grant = s.grants.get(token)!;
    if (grant.owner !== '' && s.owners.get(grant.owner) === token) s.owners.delete(grant.owner);
    for (const rid of grant.rids) {
      if (this.options.gaps.requestIdForgottenByOldGrant || s.requests.get(rid)?.token === token) s.requests.delete(rid);
    }
    s.grants.delete(token);
  }

  /** Whether a new grant of `mode` fits beside the holders (expired ones are gone by now). */
  private fits(mode: Mode, limit: number): boolean {
    const grants = [...this.state.grants.values()];
    if (limit > 1) return grants.length < limit;
    if (grants.length === 0) return true;
    return mode === SHARED && grants.every((g) => modeOf(g, this.now) === SHARED);
  }

  /**
   * Serves the queue head by head while each fits. A waiter of `handOffTo` (the releasing server)
   * gets its full lease at once and no record: it is answered from the reply (returned here).
   * Everyone else gets a claim lease, a record saying it was served, and one publish.
   */
  private serveQueue(handOffTo = ''): Reply[] {
    const s = this.state;
    const served: string[] = [];
    const handedOff: Reply[] = [];
    for (;;) {
      const head = this.options.mutant === 'queueServesNewestFirst' ? s.queue[s.queue.length - 1] : s.queue[0];
      if (!head) break;
      const waiter = s.waiters.get(head.id);
      if (!waiter || waiter.entryExpiry <= this.now) {
        this.dropWaiter(head.id);
        continue;
      }
      const handOff = handOffTo !== '' && head.id.startsWith(`${handOffTo}.`);
      const fullLease = handOff && this.options.mutant !== 'handOffGetsClaimLease';
      const expiry = this.now + (fullLease ? waiter.ttl : Math.min(waiter.ttl, waiter.entryLease));
      const held = waiter.owner !== '' ? s.owners.get(waiter.owner) : undefined;
      let grant = held !== undefined ? this.live(held) : undefined;
      if (held !== undefined && grant) {
        if (this.reenter(held, grant, waiter, expiry)) {
          waiter.state = 1;
          waiter.token = held;
        } else {
          waiter.state = 2;
        }
      } else if (this.fits(waiter.mode, waiter.limit)) {
        grant = this.createGrant(waiter.token, waiter, expiry);
        waiter.state = 1;
      } else {
        break;
      }
      s.queue = s.queue.filter((e) => e.id !== head.id);
      if (handOff && waiter.state === 1) {
        s.waiters.delete(head.id);
        handedOff.push([head.id, waiter.token, grant!.fence, waiter.ttl, grant!.exclusive + grant!.shared, waiter.holdId]);
      } else {
        served.push(head.id);
      }
    }
    if (served.length > 0) this.ctx.published.push(`g ${served.join(' ')}`);
    return handedOff;
  }

  private dropWaiter(id: string): void {
    this.state.queue = this.state.queue.filter((e) => e.id !== id);
    this.state.waiters.delete(id);
  }

  private createGrant(token: string, request: Request, expiry: number): Grant {
    const s = this.state;
    const fence = this.ctx.fenceFor(token, s.fence);
    s.fence = fence;
    const grant: Grant = {
      owner: request.owner,
      fence,
      exclusive: 0,
      shared: 0,
      leaseMs: request.ttl,
      rids: [],
      abandoned: false,
      holds: [],
      keepUntil: 0,
      expiry,
      vanishedMode: 0,
    };
    this.addHold(token, grant, request);
    if (request.owner !== '') s.owners.set(request.owner, token);
    s.grants.set(token, grant);
    s.limit = request.limit;
    return grant;
  }

  private addHold(token: string, grant: Grant, request: Request): void {
    if (request.mode === SHARED) grant.shared++;
    else grant.exclusive++;
    if (request.holdId !== '') grant.holds.push({ mode: request.mode, id: request.holdId });
    if (request.rid !== '') {
      grant.rids.push(request.rid);
      const { owner, mode, limit, ttl } = request;
      this.state.requests.set(request.rid, { token, owner, mode, limit, ttl });
    }
  }

  /** Shared -> exclusive is refused: it deadlocks against other readers. */
  private reenter(token: string, grant: Grant, request: Request, expiry: number): boolean {
    if (request.mode === EXCLUSIVE && grant.exclusive === 0) return false;
    this.addHold(token, grant, request);
    grant.expiry = Math.max(grant.expiry, expiry);
    return true;
  }

  private unnamed(grant: Grant, mode: Mode): number {
    const count = mode === SHARED ? grant.shared : grant.exclusive;
    return count - grant.holds.filter((h) => h.mode === mode).length;
  }

  /** Gives back one hold (see dropHold in state.lua for which); returns the holds left. */
  private dropHold(token: string, grant: Grant, holdId: string, mode: Mode | 0, vanishedUntil?: number): number {
    let dropMode: Mode;
    if (holdId !== '') {
      const index = grant.holds.findIndex((h) => h.id === holdId);
      dropMode = grant.holds[index].mode;
      grant.holds.splice(index, 1);
    } else if (mode === SHARED && this.unnamed(grant, SHARED) > 0) {
      dropMode = SHARED;
    } else {
      dropMode = this.unnamed(grant, EXCLUSIVE) > 0 ? EXCLUSIVE : SHARED;
    }
    if (dropMode === SHARED) grant.shared--;
    else grant.exclusive--;
    if (vanishedUntil !== undefined) {
      grant.keepUntil = Math.max(grant.keepUntil, vanishedUntil);
      if (dropMode === EXCLUSIVE || grant.vanishedMode !== EXCLUSIVE) grant.vanishedMode = dropMode;
    }
    return this.afterDrop(token, grant);
  }

  private afterDrop(token: string, grant: Grant): number {
    const left = grant.exclusive + grant.shared;
    if (left > 0) return left;
    if (grant.keepUntil > this.now) {
      grant.abandoned = true;
      grant.expiry = grant.keepUntil;
      if (this.state.queue.length > 0) this.ctx.published.push(`d ${grant.keepUntil - this.now}`);
    } else {
      this.forget(token);
    }
    return 0;
  }

  private msToNextExpiry(): number {
    const expiries = [...this.state.grants.values()].map((g) => g.expiry);
    return expiries.length === 0 ? -1 : Math.max(0, Math.min(...expiries) - this.now);
  }

  /** The key TTLs themselves are checked against Redis; the model only drops an idle lock's limit. */
  private keepKeys(): void {
    if (this.state.grants.size === 0 && this.state.queue.length === 0) this.state.limit = null;
  }
}

/** The earliest moment each key may expire: the longest lease (or a live queue) plus RETAIN_MS. */
export function keysNeededUntil(state: LockState): number {
  const expiries = [...state.grants.values()].map((g) => g.expiry);
  return expiries.length === 0 ? 0 : Math.max(...expiries) + RETAIN_MS;
}

/** A grant's mode: exclusive while it has an exclusive hold, or a vanished one's lease may still run. */
function modeOf(grant: Grant, now: number): Mode {
  return grant.exclusive > 0 || (grant.vanishedMode === EXCLUSIVE && grant.keepUntil > now) ? EXCLUSIVE : SHARED;
}

/**
 * Safety on a state at time `now`: mutual exclusion over every hold a client may still believe
 * in, live grants and Hold streams that vanished holding exclusively (until their lease plus lock
 * delay), as the README's Hold guarantee promises; a semaphore's count; hold counts that add up.
 */
export function safetyViolations(state: LockState, now: number, gaps: LuaGaps): string[] {
  const problems: string[] = [];
  if (!gaps.holdCountBelowZero) {
    for (const [token, g] of state.grants) {
      const named = (mode: Mode) => g.holds.filter((h) => h.mode === mode).length;
      if (g.exclusive < named(EXCLUSIVE) || g.shared < named(SHARED)) {
        problems.push(`grant ${token} counts ${g.exclusive} exclusive and ${g.shared} shared holds, fewer than its named ones`);
      }
    }
  }
  const live = [...state.grants.entries()].filter(([, g]) => g.expiry > now);
  const limit = state.limit ?? 1;
  if (limit > 1) {
    if (live.length > limit) problems.push(`${live.length} grants on a semaphore of ${limit}`);
    return problems;
  }
  const exclusive = live.filter(([, g]) => modeOf(g, now) === EXCLUSIVE);
  if (exclusive.length > 0 && live.length > 1) problems.push(`exclusive grant ${exclusive[0][0]} beside ${live.length - 1} other grant(s)`);
  return problems;
}
