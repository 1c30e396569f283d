// A watcher in its own process: watches lock argv[3] on server argv[2] with the TS SDK and prints
// each change as a JSON line. Tests freeze it with SIGSTOP and thaw it with SIGCONT.
const { HoldfastClient } = require('@holdfast/client');

const [addr, name] = process.argv.slice(2);
const client = new HoldfastClient(addr);
(async () => {
  for await (const change of client.watch(name)) {
    const holders = change.holders.map((h) => h.owner);
    process.stdout.write(`${JSON.stringify({ event: change.event, owner: change.holder?.owner ?? null, holders })}\n`);
  }
})().catch((err) => {
  process.stdout.write(`${JSON.stringify({ event: 'error', message: String(err) })}\n`);
  process.exit(1);
});
