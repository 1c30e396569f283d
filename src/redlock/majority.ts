// Redlock's rounds over N independent Redis masters (no replication between them): a lock is
// granted by a majority of them, within the lease's validity.
//
// Grant: every voting node runs redlock-acquire-2 in parallel with a short per-node timeout.
// With a majority of votes, the grant's fencing token is written back to a majority
// (redlock-fence-2) before anyone is told of it; otherwise every node is asked to forget it.
// The validity told is the lease minus a drift allowance, counted from when the round was sent
// (the engine counts every grant from its send time), and only while the rounds took less.
//
// Why fencing tokens never go backwards (ABD-style: read from a majority, write to a majority):
//   Let G1 be a reported grant with token F1, and G2 a later grant of the same lock. G1 was
//   reported only after F1 was written on a majority W1 of nodes, each of which still held G1's
//   vote when it took the write. G2 needs the votes of a majority V2, and a node votes for G2
//   only once G1's vote there has expired or been released, so after it took F1 if it is in W1.
//   Two majorities of one N always share a node: some node in W1 ∩ V2 answers G2's vote with a
//   highest token of at least F1, and G2's token is max(highest seen + 1, Redis TIME in µs) > F1.
//   This holds as long as a node keeps what it wrote: a node that restarts without persistence
//   forgets both its votes and its tokens, so it votes for nothing until every lease it may
//   have granted has run out (the restart watch in nodes.ts), and the TIME floor keeps tokens
//   rising across such a restart while clocks agree within that wait.
// Mutual exclusion assumes what Redlock assumes: the nodes' clocks run at about the same rate
// (the drift allowance covers 1% of the lease), and no process pauses longer than the validity
// left (the SDKs' conservative deadline, counted from the send time, covers the client's side).
import { RedlockCode } from '../engine/errors';
import type { RedlockKeys } from '../engine/keys';
import type { RedlockNode, RedlockScript, Reply } from './nodes';
import { refusal } from './refusals';

/** How long a node remembers a lock's highest fencing token after its latest grant. */
const FENCE_RETAIN_MS = 7 * 24 * 3600 * 1000;
/** A node's clock may run this much faster than the server's (Redlock's clock drift factor). */
const CLOCK_DRIFT = 0.01;
/** Retry hints: nobody's lease to wait for (votes lost or timed out); a grant lost in its fence round. */
const RETRY_UNKNOWN_MS = 250;
const RETRY_SOON_MS = 10;

function drift(ttlMs: number): number {
  return Math.ceil(ttlMs * CLOCK_DRIFT) + 2;
}

export interface VoteRequest {
  token: string;
  owner: string;
  ttlMs: number;
  holdId: string;
}

/** A grant (its fencing token and the validity told, from the round's send time), or a hint for the retry. */
export type VoteResult = { fencingToken: string; validMs: number } | { retryInMs: number };

/** A renewal confirmed for validMs (from its send time), or whether the vote is gone for good. */
export type RenewResult = { validMs: number; fencingToken?: string } | { gone: 'expired' | 'released' | false };

/** What the nodes say of a lock; a holder is one that a majority agrees on. */
export interface Survey {
  holder?: { owner: string; fence: string; ttlMs: number };
  latest: string;
}

export class Majority {
  readonly quorum: number;

  constructor(private readonly nodes: RedlockNode[]) {
    this.quorum = Math.floor(nodes.length / 2) + 1;
  }

  get size(): number {
    return this.nodes.length;
  }

  /** Why no grant can be made now (fewer voting nodes than a majority), or null. */
  grantsBlocked(): string | null {
    const voting = this.nodes.filter((n) => n.votes()).length;
    return voting >= this.quorum ? null : `only ${voting} of ${this.nodes.length} Redis masters can vote for a grant now; Redlock needs ${this.quorum}`;
  }

  /** How long until a majority votes again (0 when it does now; an estimate). */
  grantsResumeInMs(): number {
    if (!this.grantsBlocked()) return 0;
    return this.nodes.map((n) => n.votesInMs()).sort((a, b) => a - b)[this.quorum - 1];
  }

  /** Runs a script on every node (or `on`), in parallel; a node that fails or times out answers null. */
  private all(script: RedlockScript, keys: string[], args: (string | number)[], on = this.nodes): Promise<(Reply | null)[]> {
    return Promise.all(on.map((n) => n.run(script, keys, args).catch(() => null)));
  }

  /** Asks every node to forget the grant: how many did, and the hold id its vote named. */
  async forget(keys: RedlockKeys, token: string): Promise<{ released: number; holdId: string }> {
    const replies = await this.all('release', [keys.lease, keys.channel, keys.released], [token]);
    const done = replies.filter((r): r is (string | number)[] => Array.isArray(r) && r[0] === RedlockCode.DONE);
    return { released: done.length, holdId: String(done.find((r) => r[1])?.[1] ?? '') };
  }

  /** One vote round and, with a majority, its fence round. Throws the reentry refusal. */
  async vote(keys: RedlockKeys, request: VoteRequest): Promise<VoteResult> {
    const { token, owner, ttlMs, holdId } = request;
    const voters = this.nodes.filter((n) => n.votes());
    const start = performance.now();
    const replies = await this.all('acquire', [keys.lease, keys.fence], [token, ttlMs, owner, holdId], voters);
    const votes = voters.filter((_, i) => Array.isArray(replies[i]) && (replies[i] as Reply[])[0] === RedlockCode.DONE);
    let highest = 0n; // the highest token the answering nodes have seen
    let clock = 0n; // the latest Redis TIME (µs) among the votes: tokens never fall below it
    let retryInMs = RETRY_UNKNOWN_MS;
    for (const reply of replies) {
      if (!Array.isArray(reply)) continue;
      if (BigInt(reply[1]) > highest) highest = BigInt(reply[1]);
      if (reply[0] === RedlockCode.DONE) {
        if (BigInt(reply[2]) > clock) clock = BigInt(reply[2]);
      } else {
        retryInMs = Math.min(retryInMs, Math.max(0, Number(reply[2])));
        if (owner && reply[3] === owner) {
          await this.forget(keys, token);
          throw refusal('reentry');
        }
      }
    }
    if (votes.length < this.quorum) {
      // A node that timed out may have voted all the same: take back every vote that may exist.
      if (votes.length > 0 || replies.some((r) => r === null)) await this.forget(keys, token);
      return { retryInMs };
    }
    const fencingToken = (highest + 1n > clock ? highest + 1n : clock).toString();
    const written = await this.all('fence', [keys.lease, keys.fence], [token, fencingToken, FENCE_RETAIN_MS], votes);
    const validMs = ttlMs - drift(ttlMs);
    if (written.filter((r) => r === RedlockCode.DONE).length < this.quorum || validMs - (performance.now() - start) <= 0) {
      await this.forget(keys, token);
      return { retryInMs: RETRY_SOON_MS };
    }
    return { fencingToken, validMs };
  }

  /**
   * Renews on every node (ttlMs 0: the grant's own lease length); confirmed only by a majority
   * within the validity, which counts from the send time of the round.
   */
  async renew(keys: RedlockKeys, token: string, ttlMs: number, withFence = false): Promise<RenewResult> {
    const start = performance.now();
    const answers = await this.all('renew', [keys.lease, keys.released], withFence ? [token, ttlMs, '1'] : [token, ttlMs]);
    // With the fence asked for, a renewal answers {ttl, fencing token written on that node}.
    const replies = answers.map((r) => (Array.isArray(r) ? Number(r[0]) : r));
    const renewed = replies.filter((r): r is number => typeof r === 'number' && r > 0);
    const ttl = Math.min(...renewed);
    const validMs = ttl - drift(ttl);
    if (renewed.length >= this.quorum && validMs - (performance.now() - start) > 0) {
      const fencingToken = withFence ? agreedFence(answers, this.quorum) : undefined;
      return fencingToken ? { validMs, fencingToken } : { validMs };
    }
    // A majority answered that the vote is gone: no later renewal can bring it back.
    const gone = replies.filter((r) => r === RedlockCode.NOT_HERE || r === RedlockCode.GIVEN_BACK).length;
    if (gone <= this.nodes.length - this.quorum) return { gone: false };
    return { gone: replies.includes(RedlockCode.GIVEN_BACK) ? 'released' : 'expired' };
  }

  async survey(keys: RedlockKeys): Promise<Survey> {
    const replies = (await this.all('inspect', [keys.lease, keys.fence], [])).filter(Array.isArray) as (string | number)[][];
    let latest = 0n;
    const byHolder = new Map<string, (string | number)[][]>();
    for (const reply of replies) {
      if (BigInt(reply[3]) > latest) latest = BigInt(reply[3]);
      if (Number(reply[2]) > 0 && reply[4]) byHolder.set(String(reply[4]), [...(byHolder.get(String(reply[4])) ?? []), reply]);
    }
    for (const agreeing of byHolder.values()) {
      if (agreeing.length < this.quorum) continue;
      const ttlMs = Math.min(...agreeing.map((r) => Number(r[2])));
      return { holder: { owner: String(agreeing[0][0]), fence: String(agreeing[0][1]), ttlMs }, latest: latest.toString() };
    }
    return { latest: latest.toString() };
  }
}

/** The fencing token that a majority of the renewing nodes report for the grant; none if they do not agree. */
function agreedFence(answers: unknown[], quorum: number): string | undefined {
  const counts = new Map<string, number>();
  for (const answer of answers) {
    if (!Array.isArray(answer) || !(Number(answer[0]) > 0) || typeof answer[1] !== 'string') continue;
    counts.set(answer[1], (counts.get(answer[1]) ?? 0) + 1);
  }
  for (const [fence, count] of counts) if (count >= quorum) return fence;
  return undefined;
}
