// Takes and gives back a lock (acquire, then hold) over the TS SDK's session transport on server
// argv[2], prints "done" and returns without closing the client: the process must still exit.
const { HoldfastClient } = require('@holdfast/client');

(async () => {
  const client = new HoldfastClient(process.argv[2], { transport: 'session' });
  const name = `exit-${process.pid}`;
  await (await client.acquire(name)).release();
  await (await client.hold(name, { ttlMs: 1000 })).release();
  process.stdout.write('done\n');
})().catch((err) => {
  process.stderr.write(`${err}\n`);
  process.exitCode = 1;
});
