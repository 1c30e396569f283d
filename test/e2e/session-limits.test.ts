// The caps on a Session, each with the negative control that the same traffic under the cap is
// served: waits and locks per session (RESOURCE_EXHAUSTED naming the flag), operations in flight
// (the server stops reading the stream, so later operations wait in the client's HTTP/2 window),
// a session as one stream in the per-connection caps, its waits in the per-namespace caps.
import { status } from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { LockMode } from '../../gen/holdfast/v1/lock';
import { connect, type TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { openSession } from '../support/session';
import { waitFor } from '../support/wait';

const FLAGS = [
  [],
  ['--max-session-waiters', '5', '--max-session-locks', '3', '--max-holds-per-connection', '2'],
  ['--max-session-ops', '10', '--max-session-waiters', '10'],
  ['--max-waiters-per-namespace', '4'],
];
const env = useServers(FLAGS.length, (i) => FLAGS[i]);
let clients: TestClient[];
beforeAll(() => void (clients = env.clients));

/** `count` waiting shared acquires of `name` on session `s`; their op ids. */
function queueWaits(s: ReturnType<typeof openSession>, name: string, count: number, first = 1): string[] {
  return Array.from({ length: count }, (_, i) =>
    s.send({ opId: String(first + i), acquire: { name, mode: LockMode.LOCK_MODE_SHARED, waitTimeoutMs: '20000' } }),
  );
}

const waitersOf = async (client: TestClient, name: string) => (await client.inspect({ name })).waiters;

describe('caps on one session', () => {
  it('max-session-waiters: waits over the cap are RESOURCE_EXHAUSTED; those under it, and try-once operations, are served', async () => {
    const client = clients[1];
    const name = uniqueName();
    const blocker = await client.acquire({ name, ttlMs: '30000' });
    const s = openSession(client.client);
    const ids = queueWaits(s, name, 7);
    for (const id of ids.slice(5)) {
      expect((await s.answerTo(id)).error).toEqual({
        code: status.RESOURCE_EXHAUSTED,
        message: 'this session has 5 operations waiting for locks, the most max-session-waiters allows; wait for fewer locks at once',
      });
    }
    await waitFor('five to queue', async () => (await waitersOf(client, name)) === 5);
    expect((await s.op({ acquire: { name: uniqueName() } })).acquire?.acquired).toBe(true);
    await client.release({ name, token: blocker.token });
    for (const id of ids.slice(0, 5)) expect((await s.answerTo(id)).acquire?.acquired).toBe(true);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  it('max-session-locks: a hold over the cap is RESOURCE_EXHAUSTED; one released makes room', async () => {
    const s = openSession(clients[1].client);
    const names = [uniqueName(), uniqueName(), uniqueName()];
    const grants = [];
    for (const name of names) grants.push((await s.op({ hold: { name, ttlMs: '10000' } })).hold!);
    expect((await s.op({ hold: { name: uniqueName() } })).error).toEqual({
      code: status.RESOURCE_EXHAUSTED,
      message: 'this session holds 3 locks, the most max-session-locks allows; release some or open another session',
    });
    const released = await s.op({ release: { name: names[0], token: grants[0].token, holdId: grants[0].holdId } });
    expect(released.release?.released).toBe(true);
    await s.next((r) => !!r.lost);
    expect((await s.op({ hold: { name: uniqueName() } })).hold?.holdCount).toBe(1);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  it('max-session-locks counts every member of a hold_set: a set that would go over is RESOURCE_EXHAUSTED, a smaller one is held', async () => {
    const s = openSession(clients[1].client);
    expect((await s.op({ hold: { name: uniqueName(), ttlMs: '10000' } })).hold).toBeDefined();
    const tooMany = [uniqueName(), uniqueName(), uniqueName()];
    expect((await s.op({ holdSet: { names: tooMany, ttlMs: '10000' } })).error).toEqual({
      code: status.RESOURCE_EXHAUSTED,
      message: 'this session holds 1 locks and this set has 3 more, over the 3 max-session-locks allows; release some or open another session',
    });
    for (const name of tooMany) expect((await clients[1].inspect({ name })).holders).toEqual([]);
    const fits = (await s.op({ holdSet: { names: tooMany.slice(0, 2), ttlMs: '10000' } })).holdSet!;
    expect(fits.members).toHaveLength(2);
    expect((await s.op({ hold: { name: uniqueName() } })).error?.code).toBe(status.RESOURCE_EXHAUSTED);
    // At the cap, a set its own checks refuse still gets their answer, naming the field, not the cap's.
    expect((await s.op({ holdSet: { names: ['a', 'a'] } })).error).toEqual({ code: status.INVALID_ARGUMENT, message: 'names lists "a" twice' });
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  it('max-session-ops: at the cap the server stops reading; what was sent after is read once operations end', async () => {
    for (const [client, capped] of [
      [clients[2], true],
      [clients[0], false],
    ] as const) {
      const name = uniqueName();
      const blocker = await client.acquire({ name, ttlMs: '30000' });
      const s = openSession(client.client);
      queueWaits(s, name, 10);
      await waitFor('ten to queue', async () => (await waitersOf(client, name)) === 10);
      const later = uniqueName();
      const tryOnce = s.send({ opId: '100', acquire: { name: later } });
      // Another session on the same server is served meanwhile: the server is not stalled.
      const other = openSession(client.client);
      expect((await other.op({ acquire: { name: uniqueName() } })).acquire?.acquired).toBe(true);
      if (capped) {
        expect((await client.inspect({ name: later })).holders).toEqual([]);
        expect(s.received).toEqual([]);
      } else {
        expect((await s.answerTo(tryOnce)).acquire?.acquired).toBe(true);
      }
      await client.release({ name, token: blocker.token });
      expect((await s.answerTo(tryOnce)).acquire?.acquired).toBe(true);
      for (const stream of [s, other]) {
        stream.call.end();
        expect((await stream.ended).code).toBe(status.OK);
      }
    }
  });
});

describe('a session in the per-connection and per-namespace caps', () => {
  it('counts as one Hold stream on its connection, however many locks it holds', async () => {
    const client = connect(env.servers[1].addr);
    try {
      const sessions = [openSession(client.client), openSession(client.client)];
      for (const s of sessions) for (let i = 0; i < 3; i++) expect((await s.op({ hold: { name: uniqueName(), ttlMs: '10000' } })).hold).toBeDefined();
      const third = openSession(client.client);
      third.send({ opId: '1', inspect: { name: uniqueName() } });
      expect(await third.ended).toEqual({
        code: status.RESOURCE_EXHAUSTED,
        details: 'this connection has 2 Hold streams open, the most max-holds-per-connection allows; open another connection or end some',
      });
      for (const s of sessions) s.call.end();
    } finally {
      client.close();
    }
  });

  it("its waits count in the namespace's waiter cap with waiting calls", async () => {
    const client = clients[3];
    const name = uniqueName();
    const blocker = await client.acquire({ name, ttlMs: '30000' });
    const unaryWait = client.acquire({ name, waitTimeoutMs: '20000', mode: LockMode.LOCK_MODE_SHARED });
    await waitFor('the unary waiter to queue', async () => (await waitersOf(client, name)) === 1);
    const s = openSession(client.client);
    const ids = queueWaits(s, name, 4);
    expect((await s.answerTo(ids[3])).error).toEqual({
      code: status.RESOURCE_EXHAUSTED,
      message: 'the default namespace has 4 calls and session operations waiting for locks on this server, the most max-waiters-per-namespace allows',
    });
    await waitFor('three more to queue', async () => (await waitersOf(client, name)) === 4);
    await client.release({ name, token: blocker.token });
    expect((await unaryWait).acquired).toBe(true);
    for (const id of ids.slice(0, 3)) expect((await s.answerTo(id)).acquire?.acquired).toBe(true);
    // Answered waits gave their slots back: four can wait again.
    const again = uniqueName();
    const blocker2 = await client.acquire({ name: again, ttlMs: '30000' });
    const more = queueWaits(s, again, 4, 10);
    await waitFor('four to queue', async () => (await waitersOf(client, again)) === 4);
    await client.release({ name: again, token: blocker2.token });
    for (const id of more) expect((await s.answerTo(id)).acquire?.acquired).toBe(true);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });
});
