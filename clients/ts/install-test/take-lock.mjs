// The ES-module twin of take-lock.ts, run by test-install.sh in the same scratch project: the
// installed SDK (a CommonJS package) must give `import` users its named exports, the fencing
// kit's included, and take a lock.
import { HoldfastClient, FENCE_HEADERS } from '@holdfast/client';
import { createRequire } from 'node:module';

const [address, name] = process.argv.slice(2);
if (!address || !name) {
  console.error('usage: take-lock.mjs HOST:PORT LOCK_NAME');
  process.exit(2);
}
const client = new HoldfastClient(address);
try {
  const lease = await client.hold(name, { ttlMs: 5_000, waitMs: 5_000 });
  const headers = lease.fence({});
  // The unsigned pair always; Holdfast-Fence too when the server signs fences.
  const want = lease.signedFence ? [FENCE_HEADERS.fence, FENCE_HEADERS.lock, FENCE_HEADERS.token] : [FENCE_HEADERS.lock, FENCE_HEADERS.token];
  if (Object.keys(headers).sort().join() !== want.sort().join()) throw new Error(`fence headers attached: ${Object.keys(headers).join(', ') || 'none'}`);
  console.log(`imported: held "${name}" with fencing token ${lease.fencingToken}`);
  await lease.release();
  const from = createRequire(import.meta.url).resolve('@holdfast/client');
  console.log(`imported: released "${name}"; SDK loaded from ${from}`);
} catch (err) {
  console.error(`take-lock.mjs: ${err.message}`);
  process.exitCode = 1;
} finally {
  client.close();
}
