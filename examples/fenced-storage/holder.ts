// A holder: takes the lock through the TypeScript SDK and writes to the storage service with its
// lease's fence attached (lease.fence). It writes "<label>-1" once it holds the lock and one more
// write at each SIGUSR2, without looking at the lease first: a pause can always fall between such
// a look and the write, which is why the storage service checks the fence itself.
// argv: holdfast address, lock name, lease ms, storage URL, label. Prints one JSON line per event.
import { HoldfastClient } from '../../clients/ts/index';

const [addr, lock, ttlMs, storageUrl, label] = process.argv.slice(2);
const print = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

async function main(): Promise<void> {
  const client = new HoldfastClient(addr);
  const lease = await client.hold(lock, { ttlMs: Number(ttlMs), waitMs: 120_000 });
  print({ event: 'acquired', token: lease.fencingToken.toString() });
  let n = 0;
  let writing = Promise.resolve();
  const write = () => {
    const value = `${label}-${++n}`;
    writing = writing
      .then(async () => {
        const res = await fetch(`${storageUrl}/doc`, { method: 'PUT', body: value, headers: lease.fence({}) });
        print({ event: 'wrote', value, status: res.status, body: await res.json() });
      })
      .catch((err) => print({ event: 'error', message: String(err) }));
  };
  process.on('SIGUSR2', write);
  write();
}

main().catch((err) => {
  print({ event: 'error', message: String(err) });
  process.exit(1);
});
