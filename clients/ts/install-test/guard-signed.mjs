// Run by test-install.sh in the scratch project against a server that signs fences: the installed
// package's guard, keyed from the server's /fence-keys, admits a real grant's signed fence (the
// handler reads it with currentFence()) and refuses a forged unsigned token and another lock's
// fence; a store whose optional peer driver is not installed says which package to install.
import { createServer } from 'node:http';
import { currentFence, fetchFenceKeys, HoldfastClient, httpFenceGuard, MemoryFenceStore, RedisFenceStore } from '@holdfast/client';

const [address, keysUrl, name] = process.argv.slice(2);
if (!address || !keysUrl || !name) {
  console.error('usage: guard-signed.mjs HOST:PORT KEYS_URL LOCK_NAME');
  process.exit(2);
}
const check = (ok, what) => {
  if (!ok) throw new Error(what);
};
const client = new HoldfastClient(address);
const seen = [];
const guard = httpFenceGuard(new MemoryFenceStore(), { keys: await fetchFenceKeys(keysUrl), lock: name });
const server = createServer(guard.wrap((_req, res) => void (seen.push(currentFence()), res.end('ok'))));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const put = async (headers) => (await fetch(`http://127.0.0.1:${server.address().port}/`, { method: 'PUT', body: 'x', headers })).status;
try {
  const lease = await client.hold(name, { ttlMs: 5_000, waitMs: 5_000 });
  check(typeof lease.signedFence === 'string', 'the grant carries no signed fence: is the server started with --fence-signing-key?');
  check((await put(lease.fence({}))) === 200, "the guard refused the grant's own fence");
  check(seen[0]?.signed === true && seen[0].token === lease.fencingToken, 'currentFence() did not give the handler the admitted fence');
  check((await put({ 'Holdfast-Fence-Lock': name, 'Holdfast-Fence-Token': '18446744073709551615' })) === 403, 'a forged unsigned token was not refused 403');
  const other = await client.acquire(`${name}-other`, { ttlMs: 5_000 });
  check((await put(other.fence({}))) === 403, "another lock's fence was not refused 403");
  await other.release();
  await lease.release();
  const missing = await RedisFenceStore.connect('redis://127.0.0.1:1').then(
    () => 'connected',
    (err) => err.message,
  );
  check(missing.includes('npm install ioredis'), `RedisFenceStore.connect without ioredis said: ${missing}`);
  console.log(`signed: "${name}" admitted with its signed fence; a forged token and another lock's fence refused 403`);
} catch (err) {
  console.error(`guard-signed.mjs: ${err.message}`);
  process.exitCode = 1;
} finally {
  client.close();
  server.close();
}
