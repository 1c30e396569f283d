// Session streams against a real server and Redis: operations answered by op_id in any order,
// locks held under the session kept through many renewal ticks with one SessionRenewed per tick
// for the whole session, a clean end freeing every lock at once, cancels leaving nothing behind.
import { status } from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { LostReason } from '../../gen/holdfast/v1/lock';
import type { TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { deleteLockState, uniqueName } from '../support/redis';
import { openSession } from '../support/session';
import { waitFor } from '../support/wait';

const env = useServers(1);
let peer: TestClient;
beforeAll(() => void (peer = env.clients[0]));

const session = () => openSession(peer.client);

describe('operations by op_id', () => {
  it('answers each by its id as soon as it is done: a waiting acquire after a later try-once', async () => {
    const [held, free] = [uniqueName(), uniqueName()];
    const holder = await peer.acquire({ name: held, ttlMs: '30000' });
    const s = session();
    const waiting = s.send({ opId: '7', acquire: { name: held, waitTimeoutMs: '20000' } });
    const tryOnce = s.send({ opId: '8', acquire: { name: free } });
    const first = await s.next((r) => r.opId === tryOnce);
    expect(first.acquire).toMatchObject({ acquired: true });
    await waitFor('the waiting acquire to queue', async () => (await peer.inspect({ name: held })).waiters === 1);
    expect(s.received.some((r) => r.opId === waiting)).toBe(false);
    await peer.release({ name: held, token: holder.token });
    const second = await s.answerTo(waiting);
    expect(second.acquire).toMatchObject({ acquired: true, holdCount: 1 });
    expect(s.received.map((r) => r.opId)).toEqual(['8', '7']);
    // Every unary operation, on the one stream.
    const token = second.acquire!.token;
    expect(Number((await s.op({ renew: { name: held, token, ttlMs: '20000' } })).renew?.ttlMs)).toBeGreaterThan(19_000);
    expect((await s.op({ setValue: { name: held, token, value: 'host:1' } })).setValue?.fencingToken).toBe(second.acquire!.fencingToken);
    const inspected = (await s.op({ inspect: { name: held } })).inspect!;
    expect(inspected.holders).toMatchObject([{ value: 'host:1', fencingToken: second.acquire!.fencingToken }]);
    const fence = (await s.op({ checkFencingToken: { name: held, fencingToken: second.acquire!.fencingToken } })).checkFencingToken;
    expect(fence).toMatchObject({ live: true });
    expect((await s.op({ release: { name: held, token } })).release).toMatchObject({ released: true });
    s.call.end();
    expect(await s.ended).toEqual({ code: status.OK, details: 'OK' });
  });

  it('a bad operation gets its own error, and the session goes on', async () => {
    const s = session();
    const name0 = uniqueName();
    const unary = await peer.release({ name: name0, token: 'no-such-token' }).catch((err) => err);
    expect(unary.code).toBe(status.NOT_FOUND);
    expect((await s.op({ release: { name: name0, token: 'no-such-token' } })).error).toEqual({ code: status.NOT_FOUND, message: unary.details });
    expect((await s.op({})).error).toEqual({ code: status.INVALID_ARGUMENT, message: expect.stringMatching(/^op is required/) });
    const name = uniqueName();
    const holder = await peer.acquire({ name, ttlMs: '30000' });
    s.send({ opId: '5', acquire: { name, waitTimeoutMs: '20000' } });
    s.send({ opId: '5', inspect: { name } });
    expect(await s.next((r) => r.opId === '5')).toMatchObject({
      error: { code: status.INVALID_ARGUMENT, message: 'op_id 5 is in flight already: give each operation its own id' },
    });
    await peer.release({ name, token: holder.token });
    expect((await s.next((r) => r.opId === '5' && !!r.acquire)).acquire?.acquired).toBe(true);
    expect((await s.op({ acquire: { name: uniqueName() } })).acquire?.acquired).toBe(true);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  it('ping is answered with pong: when the server received it, on the clock lease times count on', async () => {
    const s = session();
    const held = await s.op({ hold: { name: uniqueName(), ttlMs: '3000' } });
    const granted = Number(held.hold!.leaseStartedAfterMs);
    // Later than the grant on the server's clock, and answered while an operation waits.
    const waiting = s.send({ opId: '90', acquire: { name: uniqueName(), waitTimeoutMs: '0' } });
    const pong = (await s.op({ ping: {} })).pong!;
    expect(Number(pong.receivedAfterMs)).toBeGreaterThanOrEqual(granted);
    const again = (await s.op({ ping: {} })).pong!;
    expect(Number(again.receivedAfterMs)).toBeGreaterThanOrEqual(Number(pong.receivedAfterMs));
    // Renewals started after a ping are reported on the same clock, so a client can count from it.
    const renewed = await s.next((r) => !!r.renewed && Number(r.renewed.leaseStartedAfterMs) >= Number(again.receivedAfterMs));
    expect(Number(renewed.renewed!.ttlMs)).toBeGreaterThan(0);
    await s.answerTo(waiting);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  it('lock sets: acquire_set takes every name or none, release_set gives them back; a cancelled one leaves nothing', async () => {
    const s = session();
    const names = [uniqueName(), uniqueName(), uniqueName()];
    const got = (await s.op({ acquireSet: { names, ttlMs: '30000' } })).acquireSet!;
    expect(got.acquired).toBe(true);
    expect(got.members.map((m) => m.name).sort()).toEqual([...names].sort());
    for (const name of names) expect((await peer.inspect({ name })).holders).toHaveLength(1);
    // Another set overlapping this one waits, and is cancelled while it waits.
    const other = [names[1], uniqueName()];
    const waiting = s.send({ opId: '41', acquireSet: { names: other, waitTimeoutMs: '20000' } });
    await waitFor('the overlapping set to queue', async () => (await peer.inspect({ name: names[1] })).waiters === 1);
    s.send({ opId: '42', cancel: waiting });
    expect((await s.answerTo(waiting)).error?.code).toBe(status.CANCELLED);
    const released = (await s.op({ releaseSet: { members: got.members.map(({ name, token }) => ({ name, token })) } })).releaseSet!;
    expect(released).toEqual({ released: 3, notHeld: [] });
    await waitFor('the queue to empty', async () => (await peer.inspect({ name: names[1] })).waiters === 0);
    for (const name of [...names, ...other]) expect((await peer.inspect({ name })).holders).toEqual([]);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  it('cancel by op_id answers CANCELLED and leaves no grant behind', async () => {
    const name = uniqueName();
    const holder = await peer.acquire({ name, ttlMs: '30000' });
    const s = session();
    const acquire = s.send({ opId: '1', acquire: { name, waitTimeoutMs: '20000' } });
    const hold = s.send({ opId: '2', hold: { name, waitTimeoutMs: '20000' } });
    await waitFor('both to queue', async () => (await peer.inspect({ name })).waiters === 2);
    s.send({ opId: '3', cancel: acquire });
    s.send({ opId: '4', cancel: hold });
    for (const id of [acquire, hold]) {
      expect((await s.answerTo(id)).error).toEqual({ code: status.CANCELLED, message: 'the operation was cancelled by the client' });
    }
    await waitFor('the queue to empty', async () => (await peer.inspect({ name })).waiters === 0);
    await peer.release({ name, token: holder.token });
    expect((await peer.inspect({ name })).holders).toEqual([]);
    expect(s.received.filter((r) => r.opId === '3' || r.opId === '4')).toEqual([]);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });
});

describe('deadline_ms: a deadline per operation, as a unary call has', () => {
  it('ends a wait at its deadline with DEADLINE_EXCEEDED and leaves nothing queued or granted; an operation done in time is answered as usual', async () => {
    const name = uniqueName();
    const holder = await peer.acquire({ name, ttlMs: '30000' });
    const s = session();
    const quick = s.send({ opId: '1', acquire: { name: uniqueName() }, deadlineMs: '300' });
    expect((await s.answerTo(quick)).acquire?.acquired).toBe(true);
    const waits = [
      s.send({ opId: '2', acquire: { name, waitTimeoutMs: '20000' }, deadlineMs: '300' }),
      s.send({ opId: '3', hold: { name, waitTimeoutMs: '20000' }, deadlineMs: '400' }),
      s.send({ opId: '4', holdSet: { names: [uniqueName(), name], waitTimeoutMs: '20000' }, deadlineMs: '500' }),
    ];
    for (const [i, id] of waits.entries()) {
      expect((await s.answerTo(id)).error).toEqual({
        code: status.DEADLINE_EXCEEDED,
        message: `the operation's deadline_ms (${300 + 100 * i} ms) passed before it was done`,
      });
    }
    // Each answered once: the quick acquire's deadline passed long ago without a second answer.
    expect(s.received.filter((r) => r.opId === quick)).toHaveLength(1);
    expect(s.received.filter((r) => waits.includes(r.opId))).toHaveLength(3);
    await waitFor('the queue to empty', async () => (await peer.inspect({ name })).waiters === 0);
    await peer.release({ name, token: holder.token });
    expect((await peer.inspect({ name })).holders).toEqual([]);
    expect((await s.op({ acquire: { name } })).acquire?.acquired).toBe(true);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  it('refuses a deadline_ms out of range, naming the field, and the session goes on', async () => {
    const s = session();
    for (const bad of ['-1', '86400001']) {
      expect((await s.op({ inspect: { name: uniqueName() }, deadlineMs: bad })).error).toEqual({
        code: status.INVALID_ARGUMENT,
        message: `deadline_ms must be between 0 and 86400000; got ${bad}`,
      });
    }
    expect((await s.op({ inspect: { name: uniqueName() }, deadlineMs: '1000' })).inspect?.holders).toEqual([]);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });
});

describe('locks held under a session', () => {
  it('stay held through many renewal ticks, with one SessionRenewed per tick for all of them', async () => {
    const names = Array.from({ length: 50 }, () => uniqueName());
    const s = session();
    const grants = await Promise.all(names.map((name) => s.op({ hold: { name, ttlMs: '600' } })));
    expect(grants.every((g) => g.hold?.holdId.length === 12)).toBe(true);
    const counted = s.received.filter((r) => r.renewed).length;
    const startedAt = Date.now();
    // Many leases' worth: each lock is renewed about every 200 ms.
    await new Promise((r) => setTimeout(r, 5000));
    const elapsed = Date.now() - startedAt;
    const renewed = s.received.filter((r) => r.renewed).slice(counted);
    for (const name of names) expect((await peer.inspect({ name })).holders).toHaveLength(1);
    // Every lock renewed about elapsed / 200 times: one message per tick would be about that many,
    // one per lock 50 times more. A busy machine may split a tick's batch in two, no more.
    const ticks = elapsed / 200;
    expect(renewed.length).toBeGreaterThan(ticks / 3);
    expect(renewed.length).toBeLessThan(ticks * 3);
    expect(renewed.every((r) => r.opId === '0' && r.renewed!.locks === 50 && Number(r.renewed!.ttlMs) > 0)).toBe(true);
    // Each later message says the session's locks run later: its deadline moves forward.
    const ends = renewed.map((r) => Number(r.renewed!.leaseStartedAfterMs) + Number(r.renewed!.ttlMs));
    expect(ends).toEqual([...ends].sort((a, b) => a - b));
    expect(s.received.some((r) => r.lost)).toBe(false);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  for (const how of ['a close operation', 'a half-close'] as const) {
    it(`a clean end (${how}) frees them all at once: waiting acquires are granted by push, long before the lease ends`, async () => {
      const names = [uniqueName(), uniqueName(), uniqueName()];
      const s = session();
      for (const name of names) expect((await s.op({ hold: { name, ttlMs: '60000' } })).hold).toBeDefined();
      const waiters = names.map((name) => peer.acquire({ name, waitTimeoutMs: '20000' }));
      await waitFor('the waiters to queue', async () => (await Promise.all(names.map((name) => peer.inspect({ name })))).every((i) => i.waiters === 1));
      if (how === 'a close operation') s.send({ opId: '99', close: {} });
      else s.call.end();
      expect((await s.ended).code).toBe(status.OK);
      // Granted within their 20 s wait: the 60 s leases were given back, not left to run out.
      expect((await Promise.all(waiters)).every((g) => g.acquired)).toBe(true);
    });
  }

  it('a cancel from a live client frees them at once too; a lock released by hold_id is reported lost (RELEASED)', async () => {
    const [kept, released] = [uniqueName(), uniqueName()];
    const s = session();
    const keptGrant = await s.op({ hold: { name: kept, ttlMs: '60000' } });
    const releasedOp = s.send({ opId: '42', hold: { name: released, ttlMs: '60000' } });
    const releasedGrant = (await s.answerTo(releasedOp)).hold!;
    expect((await peer.release({ name: released, token: releasedGrant.token, holdId: releasedGrant.holdId })).released).toBe(true);
    const lost = await s.next((r) => r.opId === releasedOp && !!r.lost);
    expect(lost.lost).toMatchObject({ code: LostReason.LOST_REASON_RELEASED, name: released });
    expect(keptGrant.hold?.holdCount).toBe(1);
    const waiter = peer.acquire({ name: kept, waitTimeoutMs: '20000' });
    await waitFor('the waiter to queue', async () => (await peer.inspect({ name: kept })).waiters === 1);
    s.call.cancel();
    expect((await waiter).acquired).toBe(true);
  });

  it('a lock whose lease is lost is reported on its own, under its hold op_id; the others stay held and renewed', async () => {
    const [lost, kept] = [uniqueName(), uniqueName()];
    const s = session();
    const lostOp = s.send({ opId: '11', hold: { name: lost, ttlMs: '600' } });
    await s.answerTo(lostOp);
    expect((await s.op({ hold: { name: kept, ttlMs: '600' } })).hold).toBeDefined();
    await deleteLockState(env.redis, lost);
    const notice = await s.next((r) => r.opId === lostOp && !!r.lost);
    expect(notice.lost).toMatchObject({ code: LostReason.LOST_REASON_EXPIRED, name: lost });
    const after = s.received.length;
    await s.next((r) => s.received.indexOf(r) >= after && r.renewed?.locks === 1);
    expect((await peer.inspect({ name: kept })).holders).toHaveLength(1);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });

  it('operations in flight when the session is cancelled leave no lock behind', async () => {
    const name = uniqueName();
    const holder = await peer.acquire({ name, ttlMs: '30000' });
    const s = session();
    s.send({ opId: '1', acquire: { name, waitTimeoutMs: '20000' } });
    s.send({ opId: '2', hold: { name, waitTimeoutMs: '20000' } });
    await waitFor('both to queue', async () => (await peer.inspect({ name })).waiters === 2);
    s.call.cancel();
    await waitFor('the queue to empty', async () => (await peer.inspect({ name })).waiters === 0);
    await peer.release({ name, token: holder.token });
    expect((await peer.inspect({ name })).holders).toEqual([]);
  });

  it('a hold not granted in time is DEADLINE_EXCEEDED with the message Hold gives, and the session goes on', async () => {
    const name = uniqueName();
    const holder = await peer.acquire({ name, ttlMs: '30000' });
    const s = session();
    expect((await s.op({ hold: { name, waitTimeoutMs: '200' } })).error).toEqual({
      code: status.DEADLINE_EXCEEDED,
      message: `lock "${name}" was not acquired within 200 ms`,
    });
    const unary = peer.hold({ name, waitTimeoutMs: '200' });
    expect(await unary.ended).toEqual({ code: status.DEADLINE_EXCEEDED, details: `lock "${name}" was not acquired within 200 ms` });
    await peer.release({ name, token: holder.token });
    expect((await s.op({ hold: { name } })).hold?.holdCount).toBe(1);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
    expect((await peer.inspect({ name })).holders).toEqual([]);
  });
});

describe('lock sets held under a session (hold_set)', () => {
  it("holds every member through renewal ticks, reported with the session's other locks; release_set gives the set back with one lost (RELEASED)", async () => {
    const names = [uniqueName(), uniqueName(), uniqueName()];
    const single = uniqueName();
    const s = session();
    expect((await s.op({ hold: { name: single, ttlMs: '600' } })).hold).toBeDefined();
    const setOp = s.send({ opId: '20', holdSet: { names, ttlMs: '600', owner: 'set-owner' } });
    const set = (await s.answerTo(setOp)).holdSet!;
    expect(set.members.map((m) => m.name)).toEqual([...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    expect(set.members.every((m) => m.holdId.length === 12 && m.token.length > 0)).toBe(true);
    // Several leases' worth of renewal ticks (about every 200 ms), each one message for all four locks.
    const after = s.received.length;
    for (let tick = 0; tick < 8; tick++) await s.next((r) => s.received.indexOf(r) >= after + tick && r.renewed?.locks === 4);
    for (const member of set.members) {
      expect((await peer.inspect({ name: member.name })).holders).toMatchObject([{ owner: 'set-owner', fencingToken: member.fencingToken }]);
    }
    expect(s.received.some((r) => r.lost)).toBe(false);
    const members = set.members.map(({ name, token, holdId }) => ({ name, token, holdId }));
    expect((await s.op({ releaseSet: { members } })).releaseSet).toEqual({ released: 3, notHeld: [] });
    const lost = await s.next((r) => r.opId === setOp && !!r.lost);
    expect(lost.lost?.code).toBe(LostReason.LOST_REASON_RELEASED);
    for (const name of names) expect((await peer.inspect({ name })).holders).toEqual([]);
    // The set left the session; its other lock is still renewed.
    const later = s.received.length;
    await s.next((r) => s.received.indexOf(r) >= later && r.renewed?.locks === 1);
    expect(s.received.filter((r) => r.opId === setOp && r.lost)).toHaveLength(1);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
    expect((await peer.inspect({ name: single })).holders).toEqual([]);
  });

  it('the first member lost ends the set: one lost names it, the others stop being renewed and are granted once their leases end', async () => {
    const names = [uniqueName(), uniqueName()];
    const s = session();
    const setOp = s.send({ opId: '30', holdSet: { names, ttlMs: '1500' } });
    const set = (await s.answerTo(setOp)).holdSet!;
    const [gone, other] = set.members;
    await deleteLockState(env.redis, gone.name);
    const lost = await s.next((r) => r.opId === setOp && !!r.lost);
    expect(lost.lost).toMatchObject({ code: LostReason.LOST_REASON_EXPIRED, name: gone.name });
    expect(lost.lost!.reason).toMatch(new RegExp(`^lock "${gone.name}": `));
    // Not the holder's word: the other member stays closed until its lease has run out, then a waiter gets it.
    expect((await peer.inspect({ name: other.name })).holders).toMatchObject([{ fencingToken: other.fencingToken }]);
    const waiter = peer.acquire({ name: other.name, waitTimeoutMs: '20000' });
    await waitFor('the waiter to queue', async () => (await peer.inspect({ name: other.name })).waiters === 1);
    const granted = await waiter;
    expect(granted.acquired).toBe(true);
    expect(BigInt(granted.fencingToken)).toBeGreaterThan(BigInt(other.fencingToken));
    expect(s.received.filter((r) => r.lost)).toHaveLength(1);
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
    await peer.release({ name: other.name, token: granted.token });
  });

  it('a clean end gives every member back at once', async () => {
    const names = [uniqueName(), uniqueName()];
    const s = session();
    expect((await s.op({ holdSet: { names, ttlMs: '60000' } })).holdSet?.members).toHaveLength(2);
    const waiters = names.map((name) => peer.acquire({ name, waitTimeoutMs: '20000' }));
    await waitFor('the waiters to queue', async () => (await Promise.all(names.map((name) => peer.inspect({ name })))).every((i) => i.waiters === 1));
    s.send({ opId: '99', close: {} });
    expect((await s.ended).code).toBe(status.OK);
    expect((await Promise.all(waiters)).every((g) => g.acquired)).toBe(true);
  });

  it("an overlapping set waits; cancelled it leaves nothing, not granted in time it is DEADLINE_EXCEEDED with HoldSet's message", async () => {
    const busy = uniqueName();
    const holder = await peer.acquire({ name: busy, ttlMs: '30000' });
    const s = session();
    const free = uniqueName();
    const waiting = s.send({ opId: '51', holdSet: { names: [free, busy], waitTimeoutMs: '20000' } });
    await waitFor('the set to queue on the busy member', async () => (await peer.inspect({ name: busy })).waiters === 1);
    s.send({ opId: '52', cancel: waiting });
    expect((await s.answerTo(waiting)).error?.code).toBe(status.CANCELLED);
    await waitFor('the queue to empty', async () => (await peer.inspect({ name: busy })).waiters === 0);
    expect((await peer.inspect({ name: free })).holders).toEqual([]);
    const late = (await s.op({ holdSet: { names: [free, busy], waitTimeoutMs: '200' } })).error;
    expect(late).toEqual({ code: status.DEADLINE_EXCEEDED, message: 'the set of 2 locks was not acquired within 200 ms' });
    expect((await peer.inspect({ name: free })).holders).toEqual([]);
    await peer.release({ name: busy, token: holder.token });
    s.call.end();
    expect((await s.ended).code).toBe(status.OK);
  });
});
