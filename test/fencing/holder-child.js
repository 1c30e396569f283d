// A holder in its own process, using the TypeScript SDK: holds lock argv[3] on holdfast argv[2]
// (lease argv[4] ms), then PUTs "<label>-1" (label argv[6]) to the storage service argv[5] with the
// lease's fence attached, and one more write, "<label>-2", "-3"..., at each SIGUSR2. It never looks
// at the lease before writing: as in Kleppmann's scenario, a pause (SIGSTOP) may fall between the
// holder's last look and its write. Prints one JSON line per event.
const { HoldfastClient } = require('@holdfast/client');

const [addr, lock, ttlMs, storageUrl, label] = process.argv.slice(2);
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

(async () => {
  const client = new HoldfastClient(addr);
  const lease = await client.hold(lock, { ttlMs: Number(ttlMs), waitMs: 60_000 });
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
  // A holder process lives on whatever its lease does (a busy machine can end a short one before
  // the test pauses it): the test, not the lease, decides when this process ends.
  setInterval(() => {}, 60_000);
  write();
})().catch((err) => {
  print({ event: 'error', message: String(err) });
  process.exit(1);
});
