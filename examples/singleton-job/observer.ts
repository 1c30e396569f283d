// Prints the singleton job's leader whenever it changes. Usage: observer.js ADDR JOB
import { HoldfastClient } from '../../clients/ts/index';

const [addr, job] = process.argv.slice(2);

void (async () => {
  for await (const leader of new HoldfastClient(addr).observe(job)) {
    const line = leader ? { leader: leader.value, fence: String(leader.fencingToken) } : { leader: null };
    process.stdout.write(`${JSON.stringify({ at: Date.now(), ...line })}\n`);
  }
})();
