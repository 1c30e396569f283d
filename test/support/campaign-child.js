// An election candidate in its own process: campaigns for lock argv[3] on server argv[2] (ttl
// argv[4]) with the TS SDK, publishing argv[5], and prints JSON lines: 'leader' with its fencing
// token once elected, 'lost' if leadership is lost. SIGTERM makes it resign cleanly and exit.
// argv[6]: the client's transport ('unary' when absent, or 'session').
const { HoldfastClient } = require('@holdfast/client');

const [addr, name, ttlMs, value, transport = 'unary'] = process.argv.slice(2);
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const client = new HoldfastClient(addr, { transport });
const quit = new AbortController();
let leadership;
process.once('SIGTERM', async () => {
  quit.abort();
  if (leadership) await leadership.resign();
  print({ event: 'resigned' });
  process.exit(0);
});
(async () => {
  print({ event: 'campaigning' });
  leadership = await client.campaign(name, value, { ttlMs: Number(ttlMs), owner: value, signal: quit.signal });
  print({ event: 'leader', fencingToken: leadership.fencingToken.toString() });
  const reason = await leadership.lost;
  print({ event: 'lost', reason: String(reason) });
})().catch((err) => {
  if (!quit.signal.aborted) print({ event: 'error', message: String(err) });
});
