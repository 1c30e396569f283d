// A holder in its own process that uses the TypeScript SDK: holds lock argv[3] on server argv[2]
// (ttl argv[4]) and prints JSON lines: the lease's expiresAt whenever it changes, and, every 5 ms,
// what its signal says, but only for the first check after the process was frozen (a gap in
// its own timer ticks). Tests freeze it with SIGSTOP and thaw it with SIGCONT.
const { HoldfastClient } = require('@holdfast/client');

const [addr, name, ttlMs] = process.argv.slice(2);
const FROZEN_GAP_MS = 500;
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

(async () => {
  const client = new HoldfastClient(addr);
  const lease = await client.hold(name, { ttlMs: Number(ttlMs), waitMs: 10_000, owner: `sdk-child-${process.pid}` });
  print({ event: 'acquired', fencingToken: lease.fencingToken.toString(), expiresAt: lease.expiresAt });
  // Kept once, as protected code usually does: looking at it must still check the deadline.
  const { signal } = lease;
  let expiresAt = lease.expiresAt;
  let lastTick = performance.now();
  setInterval(() => {
    const now = performance.now();
    const frozen = now - lastTick > FROZEN_GAP_MS;
    lastTick = now;
    // The protected work would check the signal right here.
    const aborted = signal.aborted;
    if (frozen) print({ event: 'first-check-after-freeze', aborted, at: Date.now(), expiresAt: lease.expiresAt });
    if (!aborted && lease.expiresAt !== expiresAt) {
      expiresAt = lease.expiresAt;
      print({ event: 'renewed', expiresAt });
    }
  }, 5);
})().catch((err) => {
  print({ event: 'error', message: String(err) });
  process.exit(1);
});
