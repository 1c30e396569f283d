// Several locks at once, all or nothing. Members are taken one at a time in one canonical order
// (their UTF-8 bytes), so any two callers wanting overlapping sets queue in the same order and
// never deadlock (Havender's ordered resources), on any topology: each member is its own script
// on its own slot. One deadline covers the set; members already taken are renewed while later
// ones are waited for, and given back if the set cannot be completed (deadline, cancel, error).
import { LockError } from './errors';
import type { AcquireParams, Grant, ReleaseOptions } from './types';

/** What taking and giving back a set asks of the engine (LockBackend has it). */
export interface LockCalls {
  acquire(params: AcquireParams, signal?: AbortSignal): Promise<Grant | null>;
  release(name: string, token: string, options?: ReleaseOptions): Promise<unknown>;
  renew(name: string, token: string, ttlMs: number): Promise<{ ttlMs: number }>;
}

export interface SetMemberGrant {
  name: string;
  grant: Grant;
  /** A HoldSet's hold of this member; '' for AcquireSet. */
  holdId: string;
}

/** Canonical order: by UTF-8 bytes, the same for every server and client. */
export function canonicalOrder(names: string[]): string[] {
  return [...names].sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}

/**
 * Takes every name in `names` (canonical order) with `params` (name and holdId are per member),
 * waiting up to params.waitMs in all. Resolves null when the set was not complete in time or
 * `signal` aborted; nothing is left held then. `holdIdFor` names each member's hold (HoldSet).
 */
export async function acquireSet(
  backend: LockCalls,
  names: string[],
  params: Omit<AcquireParams, 'name' | 'holdId'>,
  signal: AbortSignal,
  holdIdFor: () => string = () => '',
): Promise<SetMemberGrant[] | null> {
  const deadline = performance.now() + params.waitMs;
  const taken: SetMemberGrant[] = [];
  const keeper = new Keeper(backend, taken, params.ttlMs);
  try {
    for (const name of canonicalOrder(names)) {
      const holdId = holdIdFor();
      const waitMs = Math.max(0, Math.floor(deadline - performance.now()));
      const grant = await backend.acquire({ ...params, name, holdId, waitMs }, keeper.signalWith(signal));
      keeper.check();
      if (!grant) {
        await giveBack(backend, taken);
        return null;
      }
      taken.push({ name, grant, holdId });
    }
  } catch (err) {
    await giveBack(backend, taken);
    throw err;
  } finally {
    keeper.stop();
  }
  return taken;
}

/** Releases one hold of each member; resolves with the names whose token held nothing. */
export async function giveBack(backend: LockCalls, members: { name: string; grant: { token: string }; holdId: string }[]): Promise<string[]> {
  const results = await Promise.all(
    members.map(({ name, grant, holdId }) =>
      backend.release(name, grant.token, { holdId }).then(
        () => null,
        (err) => {
          if (err instanceof LockError && err.kind === 'not_found') return name;
          return null; // Redis unreachable: the lease runs out by itself
        },
      ),
    ),
  );
  return results.filter((name): name is string => name !== null);
}

/**
 * Renews the members already taken while the next is waited for (every third of the lease), so
 * that a long wait never lets the first ones lapse. A member that cannot be renewed (gone) ends
 * the attempt: signalWith() aborts and check() throws.
 */
class Keeper {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private failure: LockError | null = null;

  constructor(
    private readonly backend: LockCalls,
    private readonly taken: SetMemberGrant[],
    private readonly ttlMs: number,
  ) {
    this.timer = setInterval(() => void this.renewAll(), Math.max(5, Math.floor(ttlMs / 3)));
  }

  private async renewAll(): Promise<void> {
    await Promise.all(
      this.taken.map(async (member) => {
        const sentAt = performance.now();
        try {
          const { ttlMs } = await this.backend.renew(member.name, member.grant.token, this.ttlMs);
          member.grant = { ...member.grant, ttlMs, leaseStart: sentAt };
        } catch (err) {
          if (err instanceof LockError && err.kind === 'not_found' && !this.failure) {
            this.failure = new LockError('lost', `lock "${member.name}" was lost while the rest of the set was waited for`);
            this.controller.abort(this.failure);
          }
        }
      }),
    );
  }

  /** `signal`, or this keeper's failure, whichever comes first. */
  signalWith(signal: AbortSignal): AbortSignal {
    return AbortSignal.any([signal, this.controller.signal]);
  }

  check(): void {
    if (this.failure) throw this.failure;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** A member whose lease has run less than this part of it starts the set as it is. */
const FRESH_ENOUGH = 0.1;

/**
 * Renews, in parallel, every member whose lease has run more than a tenth, so that each starts
 * the set with (nearly) a full lease; a set taken without waiting costs no renewal. Throws when a
 * member is gone.
 */
export async function refreshSet(backend: LockCalls, members: SetMemberGrant[], ttlMs: number): Promise<void> {
  const now = performance.now();
  await Promise.all(
    members
      .filter((m) => now - m.grant.leaseStart > ttlMs * FRESH_ENOUGH)
      .map(async (member) => {
        const sentAt = performance.now();
        const { ttlMs: left } = await backend.renew(member.name, member.grant.token, ttlMs);
        member.grant = { ...member.grant, ttlMs: left, leaseStart: sentAt };
      }),
  );
}

/** The earliest lease start among the members: every lease ends no earlier than it plus its ttl. */
export function earliestStart(members: SetMemberGrant[]): number {
  return Math.min(...members.map((m) => m.grant.leaseStart));
}
