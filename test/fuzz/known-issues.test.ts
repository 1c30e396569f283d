// What the fuzzer found that is not fixed yet, each as the smallest reproduction. Written as the
// behaviour we want and marked `it.fails`: when a fix lands the test starts failing, and then the
// `.fails` goes (and the fuzzer's matching restriction in plans.ts with it).
import { expect, it } from 'vitest';
import { connect } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { startTcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/wait';

const env = useServers(1);

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
    expect(await peer.acquire({ name, owner: 'o', ttlMs: '600000' })).toMatchObject({ acquired: true, holdCount: 2 });
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
