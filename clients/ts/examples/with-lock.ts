// Runs a job under a lock; the job stops writing as soon as the lease may be lost.
// Built with the package: node clients/ts/dist/clients/ts/examples/with-lock.js (HOLDFAST_ADDR=host:port;
// HOLDFAST_TLS_CA, HOLDFAST_TLS_CERT and HOLDFAST_TLS_KEY name PEM files for TLS and mutual TLS,
// HOLDFAST_API_KEY is sent on every call)
import { readFileSync } from 'node:fs';
import { HoldfastClient, NotAcquiredError, type ClientTls } from '../index';

function tlsFromEnv(): ClientTls | undefined {
  const { HOLDFAST_TLS_CA: ca, HOLDFAST_TLS_CERT: cert, HOLDFAST_TLS_KEY: key } = process.env;
  if (!ca && !cert) return undefined;
  const pem = (file?: string) => (file ? readFileSync(file) : undefined);
  return { ca: pem(ca), cert: pem(cert), key: pem(key) };
}

async function main(): Promise<void> {
  const client = new HoldfastClient(process.env.HOLDFAST_ADDR ?? '127.0.0.1:50051', {
    tls: tlsFromEnv(),
    apiKey: process.env.HOLDFAST_API_KEY,
  });
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
