// What the fuzzer found, each as the smallest reproduction, written as the behaviour we want. One
// not fixed yet is marked `it.fails`; when its fix lands the test starts failing, and the `.fails`
// goes (with any restriction the fuzzer kept meanwhile, in plans.ts).
import { status } from '@grpc/grpc-js';
import { expect, it } from 'vitest';
import { connect } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { startTcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/wait';
import { bytesField } from '../support/wire-bytes';
import { call, openConnection } from './calls';

// grpc-js's own 4 MiB message limit rather than the server's 16 KiB: the health regression below needs a 200 kB request.
const env = useServers(1, ['--max-message-bytes', String(4 * 1024 * 1024)]);

// Found by HOLDFAST_FUZZ_SEED=1 HOLDFAST_FUZZ_SECONDS=120: a pool lock still held with ttl ~86 400 000
// and hold_count 0 after every client had gone. release-4.lua keeps a vanished hold's lock closed until
// the grant's lease expiry at that moment; a reentrant Acquire by the same owner had moved that expiry
// to its own, longer lease. Once that Acquire is released too, no client counts on more than the Hold's
// own lease (README, "When is a lock freed": at most ttl_ms after its last renewal), yet the lock stayed
// closed for the Acquire's whole lease. Mended: the server now tells release-4 how long the stream's own
// lease may still run.
it('a vanished Hold keeps its lock for its own lease, not for a reentrant Acquire’s longer one', async () => {
  const peer = env.clients[0];
  const name = uniqueName();
  const proxy = await startTcpProxy(env.servers[0].addr);
  const viaProxy = connect(proxy.addr);
  try {
    const hold = viaProxy.hold({ name, owner: 'o', ttlMs: '1000' });
    const { token } = (await hold.next((e) => !!e.acquired)).acquired!;
    expect(await peer.acquire({ name, owner: 'o', ttlMs: '50000' })).toMatchObject({ acquired: true, holdCount: 2 });
    proxy.cut();
    await waitFor('the vanished stream’s hold given back', async () => (await peer.inspect({ name })).holders[0]?.holdCount === 1);
    expect(await peer.release({ name, token })).toMatchObject({ released: true, holdCount: 0 });
    // The Hold's client counted on at most 1 s from its last renewal; give it 3.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect((await peer.inspect({ name })).holders).toEqual([]);
  } finally {
    viaProxy.close();
    await proxy.close();
  }
});

// Found by the fuzzer's random bytes to health's Check: grpc-js answered them INTERNAL (src/transport/health.ts).
it('a health Check that is not a message is INVALID_ARGUMENT', async () => {
  const conn = openConnection(env.servers[0].addr, 'health-check');
  try {
    const outcome = await call(conn, 'healthCheck', Buffer.from([0xff, 0xff]), { t: 'deadline', ms: 5000 });
    expect([status[outcome.code], outcome.details]).toEqual([
      'INVALID_ARGUMENT',
      'request is not a valid grpc.health.v1.HealthCheckRequest: it ends inside a field',
    ]);
  } finally {
    conn.client.close();
  }
});

// Found by the fuzzer's huge strings: grpc-health-check echoes the service name into grpc-message; from
// about 128 KiB on, the call hung, or the client's HTTP/2 layer dropped the whole connection (GOAWAY
// COMPRESSION_ERROR) with every call on it, Holds included (src/transport/health.ts).
it('a 200 kB health service name is INVALID_ARGUMENT, and its connection keeps working', async () => {
  const conn = openConnection(env.servers[0].addr, 'health-long-name');
  try {
    const outcome = await call(conn, 'healthCheck', bytesField(1, Buffer.alloc(200_000, 'é')), { t: 'deadline', ms: 5000 });
    expect([status[outcome.code], outcome.details]).toEqual(['INVALID_ARGUMENT', 'service is 200000 bytes; at most 512 are allowed']);
    expect((await call(conn, 'healthCheck', bytesField(1, 'holdfast.v1.LockService'), { t: 'deadline', ms: 5000 })).code).toBe(status.OK);
  } finally {
    conn.client.close();
  }
});
