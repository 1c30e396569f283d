// A session holder in its own process: opens a Session on argv[2], holds the locks argv[4..]
// (ttl argv[3] ms) under it, and prints one JSON line per grant and per SessionRenewed, with the
// deadline Hold's rule gives (epoch ms): the moment this client stops counting on its locks.
// Tests kill or freeze it; it never ends by itself.
const { credentials } = require('@grpc/grpc-js');
const { LockServiceClient, SessionRequest } = require('../../dist/gen/holdfast/v1/lock.js');
const { leaseDeadline, toEpochMs } = require('../../clients/ts/dist/clients/ts/deadline.js');

const [addr, ttlMs, ...names] = process.argv.slice(2);
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const client = new LockServiceClient(addr, credentials.createInsecure());
const openedAt = performance.now(); // before the stream's HEADERS go out: every time the server gives counts from here
const call = client.session();
const deadlineOf = ({ leaseStartedAfterMs, ttlMs: left }) => toEpochMs(leaseDeadline(openedAt, Number(leaseStartedAfterMs), Number(left)));
call.on('data', (response) => {
  if (response.hold) print({ event: 'held', opId: response.opId, fencingToken: response.hold.fencingToken, deadlineAt: deadlineOf(response.hold) });
  else if (response.renewed) print({ event: 'renewed', locks: response.renewed.locks, deadlineAt: deadlineOf(response.renewed) });
  else print({ event: 'other', response });
});
call.on('error', (err) => print({ event: 'ended', code: err.code }));
names.forEach((name, i) => call.write(SessionRequest.fromPartial({ opId: String(i), hold: { name, ttlMs, waitTimeoutMs: '10000' } })));
setInterval(() => {}, 60_000);
