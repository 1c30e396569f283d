// 10 000 operations in flight on one Session, with the server's default caps: every answer comes
// back under its own op_id, exactly once; cancelling half of them leaves no grant behind.
import { status } from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { LockMode, type SessionResponse } from '../../clients/ts/gen/holdfast/v1/lock';
import type { TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { openSession } from '../support/session';
import { waitFor } from '../support/wait';

const env = useServers(1);
let peer: TestClient;
beforeAll(() => void (peer = env.clients[0]));

const OPS = 10_000;
// Under the default cap of 1 000 waiters per lock.
const LOCKS = 20;

describe('10 000 operations in flight on one session', () => {
  it('are answered by op_id, each once; cancelling half leaves no grant behind', { timeout: 180_000 }, async () => {
    const names = Array.from({ length: LOCKS }, () => uniqueName());
    const blockers = await Promise.all(names.map((name) => peer.acquire({ name, ttlMs: '60000' })));
    const s = openSession(peer.client);
    // Shared waits behind each exclusive holder: once it goes, every waiter left is granted at once.
    for (let i = 0; i < OPS; i++) {
      s.send({
        opId: String(i),
        acquire: { name: names[i % LOCKS], owner: `op-${i}`, mode: LockMode.LOCK_MODE_SHARED, ttlMs: '60000', waitTimeoutMs: '120000' },
      });
    }
    const queued = async () => (await Promise.all(names.map((name) => peer.inspect({ name })))).reduce((n, i) => n + i.waiters, 0);
    await waitFor('every operation to queue', async () => (await queued()) === OPS, 60_000, 100);
    expect(s.received).toEqual([]);
    // Cancel the odd ones.
    for (let i = 1; i < OPS; i += 2) s.send({ opId: String(OPS + i), cancel: String(i) });
    await waitFor('the cancels to be answered', () => s.received.length === OPS / 2, 60_000, 50);
    expect(s.received.every((r) => Number(r.opId) % 2 === 1 && r.error?.code === status.CANCELLED)).toBe(true);
    await waitFor('the cancelled to leave the queues', async () => (await queued()) === OPS / 2, 60_000, 100);
    // Let the rest in: each is answered with its own grant.
    await Promise.all(names.map((name, i) => peer.release({ name, token: blockers[i].token })));
    await waitFor('every operation to be answered', () => s.received.length === OPS, 120_000, 100);
    const byId = new Map<string, SessionResponse>();
    for (const r of s.received) {
      expect(byId.has(r.opId), `op ${r.opId} answered twice`).toBe(false);
      byId.set(r.opId, r);
    }
    for (let i = 0; i < OPS; i += 2) expect(byId.get(String(i))?.acquire?.acquired, `op ${i}`).toBe(true);
    // The locks' holders are exactly the even operations: no cancelled one holds anything.
    for (const [n, name] of names.entries()) {
      const owners = (await peer.inspect({ name })).holders.map((h) => h.owner).sort();
      const expected = Array.from({ length: OPS / LOCKS }, (_, k) => n + k * LOCKS)
        .filter((i) => i % 2 === 0)
        .map((i) => `op-${i}`)
        .sort();
      expect(owners).toEqual(expected);
    }
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });
});
