// One instance of a service that has the singleton job's code: it campaigns for the job's lock
// and, while it leads, runs the job (a prize draw per round) with its fencing token. The ledger
// (Redis, standing in for any downstream store) refuses a draw whose token is older than the
// newest it has seen, so a deposed leader that has not noticed yet can write nothing.
// Prints one JSON line per event. Usage: instance.js ADDR REDIS_URL JOB ID TTL_MS
import { Redis } from 'ioredis';
import { HoldfastClient } from '../../clients/ts/index';

const [addr, redisUrl, job, id, ttlMs] = process.argv.slice(2);
const print = (line: object) => process.stdout.write(`${JSON.stringify({ id, ...line })}\n`);

// The downstream's fencing check: one script, so the check and the write are one step.
const DRAW = `
local newest = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) < newest then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[2])
return 1`;

async function main(): Promise<void> {
  const client = new HoldfastClient(addr);
  const ledger = new Redis(redisUrl);
  for (;;) {
    const leadership = await client.campaign(job, `instance-${id} (pid ${process.pid})`, { ttlMs: Number(ttlMs) });
    print({ event: 'leader', fence: String(leadership.fencingToken) });
    while (!leadership.signal.aborted) {
      const entry = JSON.stringify({ id, fence: String(leadership.fencingToken), at: Date.now() });
      const accepted = await ledger.eval(DRAW, 2, `${job}:newest-fence`, `${job}:draws`, String(leadership.fencingToken), entry);
      if (!accepted) print({ event: 'refused', fence: String(leadership.fencingToken) });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    print({ event: 'lost', reason: String(leadership.signal.reason) });
  }
}

main().catch((err) => {
  print({ event: 'error', message: String(err) });
  process.exit(1);
});
