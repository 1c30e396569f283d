// The program test-install.sh compiles and runs in an empty project that installed only the
// packed @holdfast/client tarball: it takes a lock against a live server and shows where the SDK
// was loaded from (that project's node_modules, not this repository).
import { HoldfastClient } from '@holdfast/client';

async function main(): Promise<void> {
  const [address, name] = process.argv.slice(2);
  if (!address || !name) throw new Error('usage: take-lock.js HOST:PORT LOCK_NAME');
  const client = new HoldfastClient(address);
  try {
    const lease = await client.hold(name, { ttlMs: 5_000, waitMs: 5_000 });
    console.log(`held "${name}" with fencing token ${lease.fencingToken}`);
    await lease.release();
    console.log(`released "${name}"; SDK loaded from ${require.resolve('@holdfast/client')}`);
  } finally {
    client.close();
  }
}

main().catch((err: unknown) => {
  console.error(`take-lock: ${(err as Error).message}`);
  process.exit(1);
});
