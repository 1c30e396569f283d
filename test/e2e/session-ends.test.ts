// When a Session's locks are freed, for the ways a session client can vanish. The rule, as for
// Hold: no server grants a lock while the session's client can still count on it (Hold's deadline
// rule applied to the session's grants and SessionRenewed messages); once those leases end, a
// waiting acquire gets the lock by push. A server started with --release-on-disconnect is the
// negative control: the same check catches it granting too early.
import { performance } from 'node:perf_hooks';
import { beforeAll, describe, expect, it } from 'vitest';
import { leaseDeadline, toEpochMs } from '../../clients/ts/deadline';
import { startJsonLineChild, type JsonLineChild } from '../support/child';
import { connect, type TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import type { ServerProcess } from '../support/server';
import { openSession } from '../support/session';
import { startTcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/wait';

// keepalive 1000/1000 ms: a frozen or cut-off peer is found dead within about two seconds, well
// inside the leases used here, so the old rule would free those locks early.
const KEEPALIVE = ['--keepalive-time-ms', '1000', '--keepalive-timeout-ms', '1000'];
const TTL_MS = 4000;
let server: ServerProcess;
let oldRule: ServerProcess;
let peer: TestClient;
const env = useServers(2, (i) => (i === 0 ? KEEPALIVE : [...KEEPALIVE, '--release-on-disconnect']));
beforeAll(() => void ([server, oldRule, peer] = [env.servers[0], env.servers[1], env.clients[0]]));

/** Queues a waiting acquire by another client; `granted` resolves with the epoch ms of its grant. */
async function queueWaiter(name: string): Promise<{ granted: Promise<number> }> {
  const granted = peer.acquire({ name, owner: 'waiter', waitTimeoutMs: '30000' }).then(async (grant) => {
    const at = Date.now();
    expect(grant.acquired).toBe(true);
    await peer.release({ name, token: grant.token });
    return at;
  });
  await waitFor('the waiter to queue', async () => (await peer.inspect({ name })).waiters === 1);
  return { granted };
}

/** What the session client believes, per lock: its grant's deadline, or the latest SessionRenewed's when later. */
function beliefs(lines: Record<string, unknown>[], count: number): number[] {
  const renewed = Math.max(0, ...lines.filter((l) => l.event === 'renewed').map((l) => l.deadlineAt as number));
  return Array.from({ length: count }, (_, i) => {
    const held = lines.find((l) => l.event === 'held' && l.opId === String(i));
    return Math.max(held!.deadlineAt as number, renewed);
  });
}

/** Holds three locks in a child's session, ends the child with `signal` after a renewal; when each lock was believed held until, and granted. */
async function vanishAfterRenewal(addr: string, signal: 'SIGKILL' | 'SIGSTOP') {
  const names = [uniqueName(), uniqueName(), uniqueName()];
  const holder: JsonLineChild = startJsonLineChild('session-child.js', [addr, String(TTL_MS), ...names]);
  try {
    await holder.next((l) => l.event === 'renewed' && l.locks === names.length);
    const waiters = await Promise.all(names.map(queueWaiter));
    holder.child.kill(signal);
    const believed = beliefs(holder.lines, names.length);
    return { believed, grantedAt: await Promise.all(waiters.map((w) => w.granted)) };
  } finally {
    holder.child.kill('SIGKILL');
    await holder.exited;
  }
}

describe('a session client that vanishes keeps its locks until their leases end', () => {
  for (const signal of ['SIGKILL', 'SIGSTOP'] as const) {
    it(`${signal}: no lock is granted before its deadline; each is granted by push after`, async () => {
      const { believed, grantedAt } = await vanishAfterRenewal(server.addr, signal);
      grantedAt.forEach((at, i) => expect(at).toBeGreaterThanOrEqual(believed[i]));
    });
  }

  it('cut off (proxy): no lock is granted before its deadline; each is granted by push after', async () => {
    const proxy = await startTcpProxy(server.addr);
    const viaProxy = connect(proxy.addr);
    const names = [uniqueName(), uniqueName()];
    try {
      const openedAt = performance.now();
      const s = openSession(viaProxy.client);
      const grants = await Promise.all(names.map((name) => s.op({ hold: { name, ttlMs: String(TTL_MS) } })));
      const renewal = await s.next((r) => !!r.renewed);
      const deadline = (r: { leaseStartedAfterMs: string; ttlMs: string }) =>
        toEpochMs(leaseDeadline(openedAt, Number(r.leaseStartedAfterMs), Number(r.ttlMs)));
      const waiters = await Promise.all(names.map(queueWaiter));
      proxy.cut();
      const believed = grants.map((g) => Math.max(deadline(g.hold!), deadline(s.received.filter((r) => r.renewed).at(-1)!.renewed!)));
      expect(renewal.renewed?.locks).toBe(2);
      const grantedAt = await Promise.all(waiters.map((w) => w.granted));
      grantedAt.forEach((at, i) => expect(at).toBeGreaterThanOrEqual(believed[i]));
    } finally {
      viaProxy.close();
      await proxy.close();
    }
  });

  it('operations in flight when the connection drops leave no lock behind', async () => {
    const proxy = await startTcpProxy(server.addr);
    const viaProxy = connect(proxy.addr);
    const name = uniqueName();
    try {
      const blocker = await peer.acquire({ name, ttlMs: '30000' });
      const s = openSession(viaProxy.client);
      s.send({ opId: '1', acquire: { name, waitTimeoutMs: '20000' } });
      s.send({ opId: '2', hold: { name, waitTimeoutMs: '20000' } });
      await waitFor('both to queue', async () => (await peer.inspect({ name })).waiters === 2);
      proxy.cut();
      await waitFor('the queue to empty', async () => (await peer.inspect({ name })).waiters === 0);
      await peer.release({ name, token: blocker.token });
      expect((await peer.inspect({ name })).holders).toEqual([]);
    } finally {
      viaProxy.close();
      await proxy.close();
    }
  });

  it('negative control: with --release-on-disconnect the same check catches a grant before the deadline', async () => {
    const { believed, grantedAt } = await vanishAfterRenewal(oldRule.addr, 'SIGKILL');
    expect(grantedAt.some((at, i) => at < believed[i])).toBe(true);
  });
});
