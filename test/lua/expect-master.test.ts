// The on-master variant of the granting scripts (lua/includes/expect-master.lua), on a real
// redis-server: it grants only on the node whose run_id the server checked, and the script
// below it sees its own arguments unchanged.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { lockLibrary } from '../../src/redis/functions';
import { lockKeys } from '../../src/engine/keys';
import { startTestRedis, uniqueName, type TestRedis } from '../support/redis';

let redis: TestRedis;
let runId: string;

beforeAll(async () => {
  redis = await startTestRedis();
  await lockLibrary().load(redis.client);
  runId = /^run_id:(\w+)/m.exec(await redis.client.info('server'))![1];
});
afterAll(() => redis.cleanup());

function acquireOnMaster(name: string, token: string, expected: string): Promise<unknown[]> {
  const k = lockKeys('hf', name);
  return lockLibrary().call(
    redis.client,
    'acquire',
    [k.holders, k.queue, k.data, k.channel],
    [token, '', 10000, 1, 1, '', '', 3000, '', expected],
    true,
  ) as Promise<unknown[]>;
}

it('grants on the master it names, with the grant the plain script would make', async () => {
  const name = uniqueName('om');
  const reply = await acquireOnMaster(name, 'tok-1', runId);
  expect(reply[0]).toBe(1);
  expect(reply[1]).toBe('tok-1');
  expect(await redis.client.pttl(lockKeys('hf', name).holders)).toBeGreaterThan(9000);
});

it('refuses with MASTERCHANGED on any other node, and leaves nothing behind', async () => {
  const name = uniqueName('om');
  await expect(acquireOnMaster(name, 'tok-2', 'f'.repeat(40))).rejects.toThrow(/^MASTERCHANGED /);
  expect(await redis.client.exists(...Object.values(lockKeys('hf', name)))).toBe(0);
});

it('claim has the same variant (a hand-off is a grant)', async () => {
  const k = lockKeys('hf', uniqueName('om'));
  await expect(lockLibrary().call(redis.client, 'claim', [k.holders, k.queue, k.data, k.channel], [3000, 'w1', 'not-this-master'], true)).rejects.toThrow(
    /^MASTERCHANGED /,
  );
});
