// Runs a job under a lock; the job stops writing as soon as the lease may be lost.
// Built with the package: node dist/clients/ts/examples/with-lock.js (HOLDFAST_ADDR=host:port)
import { HoldfastClient, NotAcquiredError } from '..';

async function main(): Promise<void> {
  const client = new HoldfastClient(process.env.HOLDFAST_ADDR ?? '127.0.0.1:50051');
  try {
    const written = await client.withLock(
      'nightly-report',
      async (lease) => {
        let rows = 0;
        for (; rows < 10 && !lease.signal.aborted; rows++) {
          // Pass the fencing token to the storage so it can refuse a stale writer.
          console.log(`row ${rows} written with fencing token ${lease.fencingToken}`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        return rows;
      },
      { ttlMs: 10_000, waitMs: 5_000, owner: 'report-job' },
    );
    console.log(`done: ${written} rows`);
  } catch (err) {
    if (err instanceof NotAcquiredError) console.error(err.message);
    else throw err;
  } finally {
    client.close();
  }
}

void main();
