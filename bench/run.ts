// `npm run bench`: the hold, throughput and contention benchmarks, each in its own process
// (so one's servers and memory never touch the other's figures). Settings come from the
// HOLDFAST_BENCH_* environment variables each benchmark reads.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

let failed = false;
for (const bench of ['hold.js', 'throughput.js', 'contention.js']) {
  const run = spawnSync(process.execPath, [join(__dirname, bench)], { stdio: 'inherit' });
  if (run.status !== 0) {
    process.stderr.write(`bench: ${bench} exited with ${run.status ?? run.signal}\n`);
    failed = true;
  }
}
process.exitCode = failed ? 1 : 0;
