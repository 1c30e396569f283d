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
  if (Object.keys(headers).length !== Object.keys(FENCE_HEADERS).length) throw new Error('no fence headers attached');
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
