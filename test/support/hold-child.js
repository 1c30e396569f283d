// A holder in its own process: opens Hold on argv[2] for lock argv[3] (ttl argv[4]) and prints
// each event as a JSON line. Tests kill or freeze it.
const { credentials } = require('@grpc/grpc-js');
const { LockServiceClient } = require('../../dist/gen/holdfast/v1/lock.js');

const [addr, name, ttlMs] = process.argv.slice(2);
const client = new LockServiceClient(addr, credentials.createInsecure());
const call = client.hold({ name, owner: `child-${process.pid}`, ttlMs, waitTimeoutMs: '10000', mode: 0, limit: 0, maxHoldMs: '0' });
call.on('data', (event) => process.stdout.write(`${JSON.stringify(event)}\n`));
call.on('error', (err) => {
  process.stdout.write(`${JSON.stringify({ ended: err.code })}\n`);
  process.exit(0);
});
