// The commands of a random run (fast-check arbitraries), what each stands for as a script call
// and as a model call, and the World that resolves picks to the tokens, hold ids, fences and
// waiters handed out so far. lua-model.test.ts runs them.
import fc from 'fast-check';
import { EXCLUSIVE, SHARED, type LockModel, type Mode, type Reply, type Request } from './model';

export type Kind = 'rw' | 'semaphore2' | 'semaphore3';
export type Op =
  | {
      op: 'acquire';
      owner: string;
      shared: boolean;
      otherLimit: boolean;
      ttl: number;
      rid: string;
      queued: boolean;
      entryLease: number;
      named: boolean;
      server: string;
    }
  | { op: 'requeue'; pick: number }
  | { op: 'release'; pick: number; hold: number | null; vanished: boolean; lockDelay: number; server: string }
  | { op: 'renew'; pick: number; ttl: number; hold: number | null; batched: boolean }
  | { op: 'claim'; picks: number[]; served: boolean; entryLease: number }
  | { op: 'dequeue'; pick: number }
  | { op: 'abortWait'; pick: number }
  | { op: 'inspect' }
  | { op: 'checkFence'; pick: number }
  | { op: 'sleep'; ms: number };

const ttlArb = fc.constantFrom(15, 30, 60, 5000);
const entryLeaseArb = fc.constantFrom(20, 40, 5000, 5000);
/** Picks count back from the newest token, hold or waiter: recent ones are the live ones. */
const pickArb = fc.nat({ max: 5 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('acquire' as const),
      owner: fc.constantFrom('', '', 'a', 'b'),
      shared: fc.boolean(),
      otherLimit: fc.integer({ min: 0, max: 15 }).map((n) => n === 0),
      ttl: ttlArb,
      rid: fc.constantFrom('', '', '', 'r1', 'r2'),
      queued: fc.integer({ min: 0, max: 2 }).map((n) => n > 0),
      entryLease: entryLeaseArb,
      named: fc.boolean(),
      // Mostly sA, so that a release by sA often finds its own waiter at the head (a hand-off).
      server: fc.constantFrom('sA', 'sA', 'sB'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('requeue' as const), pick: pickArb }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('release' as const),
      pick: pickArb,
      hold: fc.option(pickArb, { freq: 2 }),
      vanished: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
      lockDelay: fc.constantFrom(0, 20),
      // The releasing server: its own waiters are handed the lock in the reply (release-4 ARGV[6]).
      server: fc.constantFrom('', 'sA', 'sA', 'sB'),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('renew' as const),
      pick: pickArb,
      ttl: fc.constantFrom(0, 15, 60, 5000),
      hold: fc.option(pickArb, { freq: 2 }),
      // Through renew-batch-3 (a batch of one answers as renew-3 does): both must follow the model.
      batched: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('claim' as const),
      picks: fc.array(pickArb, { minLength: 1, maxLength: 3 }),
      served: fc.boolean(),
      entryLease: entryLeaseArb,
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('dequeue' as const), pick: pickArb }) },
  // A deadlock walk ending a wait, at any moment (the walk itself is not modelled): mostly one
  // that was queued last we heard, pick 5 any waiter (then mostly one no longer waiting).
  { weight: 2, arbitrary: fc.record({ op: fc.constant('abortWait' as const), pick: pickArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('inspect' as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('checkFence' as const), pick: pickArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('sleep' as const), ms: fc.integer({ min: 5, max: 50 }) }) },
);
export const runArb = fc.tuple(fc.constantFrom<Kind>('rw', 'rw', 'semaphore2', 'semaphore3'), fc.array(opArb, { minLength: 5, maxLength: 40, size: 'max' }));

/** A script call, and the same call on the model. */
export interface Call {
  script: 'acquire' | 'release' | 'renew' | 'renewBatch' | 'claim' | 'dequeue' | 'abortWait' | 'inspect' | 'checkFencingToken';
  args: (string | number)[];
  onModel(model: LockModel): Reply | number;
}

interface AcquireCall {
  token: string;
  request: Request;
  waiterId: string;
  entryLease: number;
}

/** What the harness has handed out so far in one sequence: tokens, hold ids, waiters. */
export class World {
  tokens: string[] = [];
  holds: string[] = [];
  waiters: string[] = [];
  fences: string[] = [];
  holdsOf = new Map<string, string[]>();
  waiterCalls = new Map<string, AcquireCall>();
  gone = new Set<string>();
  /** Waiters last heard of as queued (acquire answered 2, no claim or dequeue answered otherwise since). */
  queued: string[] = [];
  /** The waiters the latest publish named: what their server claims next. */
  served: string[] = [];
  private counter = 0;

  fresh(prefix: string): string {
    return `${prefix}${++this.counter}`;
  }

  waiter(pick: number): string {
    return this.waiters[this.waiters.length - 1 - (pick % this.waiters.length)];
  }

  token(pick: number): string {
    if (pick === 5 || this.tokens.length === 0) return 'no-such-token';
    return this.tokens[this.tokens.length - 1 - (pick % this.tokens.length)];
  }

  /** Mostly one of the token's own Hold streams' holds; pick 5, any hold id handed out. */
  hold(pick: number | null, token: string): string {
    const own = this.holdsOf.get(token) ?? [];
    const from = pick === 5 || own.length === 0 ? this.holds : own;
    if (pick === null || from.length === 0) return '';
    return from[from.length - 1 - (pick % from.length)];
  }

  fence(pick: number): string {
    const i = pick % (this.fences.length + 1);
    return i === this.fences.length ? '1' : this.fences[this.fences.length - 1 - i];
  }

  sawGrant(token: string, fence: string, holdId: string): void {
    if (!this.tokens.includes(token)) this.tokens.push(token);
    if (!this.fences.includes(fence)) this.fences.push(fence);
    if (holdId) this.holdsOf.set(token, [...(this.holdsOf.get(token) ?? []), holdId]);
  }
}

function limitOf(kind: Kind): number {
  return kind === 'rw' ? 1 : kind === 'semaphore2' ? 2 : 3;
}

function acquireCall(a: AcquireCall): Call {
  const r = a.request;
  return {
    script: 'acquire',
    args: [a.token, r.owner, r.ttl, r.mode, r.limit, r.rid, a.waiterId, a.entryLease, r.holdId],
    onModel: (m) => m.acquire(a.token, { ...r }, a.waiterId, a.entryLease),
  };
}

/** The call an op stands for, or null when it has nothing to act on. */
export function toCall(op: Op, kind: Kind, world: World): Call | null {
  switch (op.op) {
    case 'acquire': {
      const limit = op.otherLimit ? (limitOf(kind) === 1 ? 2 : 1) : limitOf(kind);
      const mode: Mode = kind === 'rw' && op.shared ? SHARED : EXCLUSIVE;
      const holdId = op.named ? world.fresh('hold') : '';
      if (holdId) world.holds.push(holdId);
      const a: AcquireCall = {
        token: world.fresh('tok'),
        request: { owner: op.owner, mode, limit, ttl: op.ttl, rid: op.rid, holdId },
        // Waiters of two servers, sA and sB, as the engine names them ('<server id>.<random>').
        waiterId: op.queued ? world.fresh(`${op.server}.w`) : '',
        entryLease: op.entryLease,
      };
      if (a.waiterId) {
        world.waiters.push(a.waiterId);
        world.waiterCalls.set(a.waiterId, a);
      }
      return acquireCall(a);
    }
    case 'requeue': {
      // What wait-room does when claim says an entry is gone: the same acquire again, at the back.
      const gone = [...world.gone];
      if (gone.length === 0) return null;
      const waiterId = gone[op.pick % gone.length];
      world.gone.delete(waiterId);
      return acquireCall(world.waiterCalls.get(waiterId)!);
    }
    case 'release': {
      const token = world.token(op.pick);
      const holdId = world.hold(op.hold, token);
      return {
        script: 'release',
        args: [token, holdId, op.vanished ? 1 : 0, op.lockDelay, '', op.server],
        onModel: (m) => m.release(token, holdId, op.vanished, op.lockDelay, op.server),
      };
    }
    case 'renew': {
      const token = world.token(op.pick);
      const holdId = world.hold(op.hold, token);
      return { script: op.batched ? 'renewBatch' : 'renew', args: [token, op.ttl, holdId], onModel: (m) => m.renew(token, op.ttl, holdId) };
    }
    case 'claim': {
      if (world.waiters.length === 0) return null;
      // A server claims the waiters a message named, or (its timer) all it has; here some of them.
      const ids = op.served && world.served.length > 0 ? world.served.splice(0) : [...new Set(op.picks.map((p) => world.waiter(p)))];
      return { script: 'claim', args: [op.entryLease, ...ids], onModel: (m) => m.claim(op.entryLease, ids) };
    }
    case 'dequeue': {
      if (world.waiters.length === 0) return null;
      const id = world.waiter(op.pick);
      return { script: 'dequeue', args: [id], onModel: (m) => m.dequeue(id) };
    }
    case 'abortWait': {
      if (world.waiters.length === 0) return null;
      const id = op.pick === 5 || world.queued.length === 0 ? world.waiter(op.pick) : world.queued[op.pick % world.queued.length];
      const message = `deadlock: a cycle through ${id} (${world.fresh('walk')})`;
      return { script: 'abortWait', args: [id, message], onModel: (m) => m.abortWait(id, message) };
    }
    case 'inspect':
      return { script: 'inspect', args: [], onModel: (m) => m.inspect() };
    case 'checkFence': {
      const fence = world.fence(op.pick);
      return { script: 'checkFencingToken', args: [fence], onModel: (m) => m.checkFencingToken(fence) };
    }
    case 'sleep':
      return null;
  }
}

export function learn(call: Call, reply: Reply | number, world: World): void {
  if (call.script === 'acquire' && Array.isArray(reply) && reply[0] === 1) world.sawGrant(String(reply[1]), String(reply[2]), String(call.args[8]));
  if (call.script === 'acquire' && Array.isArray(reply) && reply[0] === 2) {
    world.gone.delete(String(call.args[6]));
    world.queued.push(String(call.args[6]));
  }
  const noLongerQueued = (id: string) => (world.queued = world.queued.filter((q) => q !== id));
  if (call.script === 'dequeue' || (call.script === 'abortWait' && reply === 1)) noLongerQueued(String(call.args[0]));
  if (call.script === 'release' && Array.isArray(reply) && Array.isArray(reply[3])) {
    for (const [id, token, fence] of reply[3] as Reply[]) {
      world.sawGrant(String(token), String(fence), world.waiterCalls.get(String(id))?.request.holdId ?? '');
    }
  }
  if (call.script === 'claim' && Array.isArray(reply)) {
    (reply[1] as Reply[]).forEach((result, i) => {
      const id = String(call.args[i + 1]);
      if (result[0] === 1) world.sawGrant(String(result[1]), String(result[2]), world.waiterCalls.get(id)?.request.holdId ?? '');
      if (result[0] === -1 && world.waiterCalls.has(id)) world.gone.add(id);
      if (result[0] !== 2) noLongerQueued(id);
    });
  }
}
