// Hold: the open stream is the lease. Real server processes, real child holders that are killed
// and frozen, a real redis-server that is deleted behind the server's back and stopped.
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LostReason } from '../../gen/holdfast/v1/lock';
import { connect, type TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { deleteLockState, startTestRedis, uniqueName, type TestRedis } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

// One server, two clients on it; keepalive 1000/1000 ms so a frozen peer is found dead quickly.
const env = useServers(1, ['--keepalive-time-ms', '1000', '--keepalive-timeout-ms', '1000']);
let redis: TestRedis;
let server: ServerProcess;
let client: TestClient;
let peer: TestClient;
beforeAll(() => {
  [redis, server, client] = [env.redis, env.servers[0], env.clients[0]];
  peer = connect(server.addr);
});
afterAll(() => peer?.close());

const holderCount = async (c: TestClient, name: string) => (await c.inspect({ name })).holders.length;

describe('Hold', () => {
  it('sends acquired, then renewed events while the lock stays held', async () => {
    const name = uniqueName();
    const stream = client.hold({ name, ttlMs: '300' });
    const acquired = (await stream.next((e) => !!e.acquired)).acquired!;
    expect(acquired.holdCount).toBe(1);
    expect(acquired.ttlMs).toBe('300');
    for (let n = 1; n <= 4; n++) {
      await stream.next(() => stream.events.filter((e) => e.renewed).length >= n);
      const info = await peer.inspect({ name });
      expect(info.holders.map((h) => h.fencingToken)).toEqual([acquired.fencingToken]);
    }
    expect(stream.events.slice(1).every((e) => e.renewed && Number(e.renewed.ttlMs) === 300)).toBe(true);
    expect((await peer.acquire({ name })).acquired).toBe(false);
    stream.call.cancel();
  });

  it('the token from acquired works with Renew and Release; Release ends the stream with OK', async () => {
    const name = uniqueName();
    const stream = client.hold({ name, ttlMs: '5000' });
    const { token } = (await stream.next((e) => !!e.acquired)).acquired!;
    expect((await peer.renew({ name, token, ttlMs: '6000' })).ttlMs).toBe('6000');
    expect(await peer.release({ name, token })).toEqual({ released: true, holdCount: 0 });
    expect(await stream.ended).toMatchObject({ code: status.OK });
    expect(stream.events.some((e) => e.lost)).toBe(false);
    expect((await peer.acquire({ name })).acquired).toBe(true);
  });

  it('keeps the hold of a client that sends its own keepalive pings (no ping policy rejects it)', async () => {
    const pinging = connect(server.addr, { 'grpc.keepalive_time_ms': 200, 'grpc.keepalive_timeout_ms': 1000, 'grpc.keepalive_permit_without_calls': 1 });
    try {
      const name = uniqueName();
      const stream = pinging.hold({ name, ttlMs: '300' });
      await stream.next(() => stream.events.filter((e) => e.renewed).length >= 12); // ~1.2 s of pings every 200 ms
      expect(stream.events.some((e) => e.lost)).toBe(false);
      expect(await holderCount(client, name)).toBe(1);
      stream.call.cancel();
    } finally {
      pinging.close();
    }
  });

  it('ends with DEADLINE_EXCEEDED when not acquired within wait_timeout_ms', async () => {
    const name = uniqueName();
    await peer.acquire({ name, ttlMs: '30000' });
    const stream = client.hold({ name, waitTimeoutMs: '200' });
    const ended = await stream.ended;
    expect(ended.code).toBe(status.DEADLINE_EXCEEDED);
    expect(ended.details).toMatch(/not acquired within 200 ms/);
    expect((await client.inspect({ name })).waiters).toBe(0);
  });

  it('the call deadline bounds the wait too', async () => {
    const name = uniqueName();
    await peer.acquire({ name, ttlMs: '30000' });
    const stream = client.hold({ name, waitTimeoutMs: '60000' }, 300);
    expect((await stream.ended).code).toBe(status.DEADLINE_EXCEEDED);
    await waitFor('the waiter to leave the queue', async () => (await client.inspect({ name })).waiters === 0);
  });

  it('reports lost (TAKEN) and ends with ABORTED when the grant is replaced behind its back', async () => {
    const name = uniqueName();
    const stream = client.hold({ name, ttlMs: '600' });
    await stream.next((e) => !!e.acquired);
    await deleteLockState(redis, name);
    expect((await peer.acquire({ name, ttlMs: '30000' })).acquired).toBe(true);
    const lost = (await stream.next((e) => !!e.lost)).lost!;
    expect(lost.code).toBe(LostReason.LOST_REASON_TAKEN);
    expect(await stream.ended).toMatchObject({ code: status.ABORTED });
  });

  it('reports lost (EXPIRED) when the grant vanished and nobody holds the lock', async () => {
    const name = uniqueName();
    const stream = client.hold({ name, ttlMs: '600' });
    await stream.next((e) => !!e.acquired);
    await deleteLockState(redis, name);
    expect((await stream.next((e) => !!e.lost)).lost!.code).toBe(LostReason.LOST_REASON_EXPIRED);
    expect((await stream.ended).code).toBe(status.ABORTED);
  });

  it('rejects bad Hold input with INVALID_ARGUMENT naming the field', async () => {
    expect(await client.hold({ name: '' }).ended).toMatchObject({ code: status.INVALID_ARGUMENT, details: expect.stringContaining('name') });
    expect(await client.hold({ name: 'x', ttlMs: '1' }).ended).toMatchObject({ code: status.INVALID_ARGUMENT, details: expect.stringContaining('ttl_ms') });
    expect(await client.hold({ name: 'x', maxHoldMs: '-5' }).ended).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining('max_hold_ms'),
    });
  });
});

describe('Hold when Redis goes away', () => {
  it('reports lost (BACKEND_UNAVAILABLE) and ABORTED before the lease could have ended', async () => {
    const ownRedis = await startTestRedis();
    const ownServer = await startServerProcess(ownRedis.url);
    const c = connect(ownServer.addr);
    try {
      const stream = c.hold({ name: uniqueName(), ttlMs: '1000' });
      await stream.next((e) => !!e.acquired);
      const acquiredAt = performance.now();
      await ownRedis.stop();
      const lost = (await stream.next((e) => !!e.lost)).lost!;
      expect(lost.code).toBe(LostReason.LOST_REASON_BACKEND_UNAVAILABLE);
      expect(performance.now() - acquiredAt).toBeLessThan(1000);
      expect((await stream.ended).code).toBe(status.ABORTED);
    } finally {
      c.close();
      await ownServer.stop();
      await ownRedis.cleanup();
    }
  });
});
