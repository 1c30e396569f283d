// Leader election with the TS SDK on real servers and real candidate processes: a SIGKILLed
// leader is replaced, and every observer sees it, within its lease plus a margin (the Hold
// safety rules keep its lock closed that long); a leader that resigns is replaced at once; each
// new leader's fencing token is greater than the last. Candidates hold their lock over either
// transport of the SDK (a Hold stream each, or one Session stream per candidate).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient, type Leader } from '../../clients/ts/index';
import { startJsonLineChild, type JsonLineChild } from '../support/child';
import { collect } from '../support/collect';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';

const env = useServers(2);
const TTL_MS = 2000;
/** Beyond the lease: the server noticing the loss, the queue's hand-off, the watch read, two machines' worth of scheduling. */
const MARGIN_MS = 3000;

let observers: HoldfastClient[];
beforeAll(() => {
  observers = env.servers.map((s) => new HoldfastClient(s.addr));
});
afterAll(() => observers?.forEach((o) => o.close()));

function candidate(server: number, name: string, value: string, transport: string): JsonLineChild {
  return startJsonLineChild('campaign-child.js', [env.servers[server].addr, name, String(TTL_MS), value, transport]);
}

describe.each(['unary', 'session'])('election, candidates over transport %s', (transport) => {
  it('replaces a SIGKILLed leader within its ttl plus a margin and a resigned one at once, seen by every observer, fencing tokens rising', async () => {
    const name = uniqueName('election');
    const stop = new AbortController();
    const seen = observers.map((o) => collect(o.observe(name, { signal: stop.signal })));
    await Promise.all(seen.map((s) => s.next((l) => l === null)));
    const candidates = new Map(['c1', 'c2', 'c3'].map((v, i) => [v, candidate(i % 2, name, v, transport)]));
    try {
      const leaderValue = async (exclude: Set<string>, timeoutMs: number) => {
        const leaders = await Promise.all(seen.map((s) => s.next((l) => l !== null && !exclude.has(l.value), timeoutMs)));
        expect(new Set(leaders.map((l) => l!.value)).size).toBe(1); // every observer names the same leader
        return leaders[0] as Leader;
      };
      const gone = new Set<string>();
      const first = await leaderValue(gone, 20_000);
      const firstChild = candidates.get(first.value)!;
      const told = await firstChild.next((l) => l.event === 'leader');
      expect(BigInt(told.fencingToken as string)).toBe(first.fencingToken);

      // SIGKILL: no word from the leader, so its lock stays closed until its lease has run out.
      const killedAt = performance.now();
      firstChild.child.kill('SIGKILL');
      gone.add(first.value);
      const second = await leaderValue(gone, TTL_MS + MARGIN_MS);
      expect(performance.now() - killedAt).toBeLessThan(TTL_MS + MARGIN_MS);
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      await candidates.get(second.value)!.next((l) => l.event === 'leader');

      // A clean resign frees the lock at once: the next leader comes well within one lease.
      const resignedAt = performance.now();
      candidates.get(second.value)!.child.kill('SIGTERM');
      gone.add(second.value);
      const third = await leaderValue(gone, TTL_MS);
      expect(performance.now() - resignedAt).toBeLessThan(TTL_MS);
      expect(third.fencingToken).toBeGreaterThan(second.fencingToken);
      // Each observer saw exactly these three leaders, in this order.
      for (const s of seen) expect(s.items.filter((l) => l !== null).map((l) => l!.value)).toEqual([first.value, second.value, third.value]);
    } finally {
      stop.abort();
      for (const c of candidates.values()) c.child.kill('SIGKILL');
    }
  });
});
