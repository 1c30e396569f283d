// Preloaded into a benchmark's server process (node --expose-gc --require memory-probe.js): on
// SIGUSR2 it collects garbage and writes the process's memory use to HOLDFAST_BENCH_MEMORY_FILE,
// so a benchmark reads live heap, not heap plus garbage not collected yet. With
// HOLDFAST_BENCH_HEAP_SNAPSHOT_DIR set, each signal also writes a heap snapshot there (profiling
// only: it stops the server for seconds). Not part of the server.
import { writeFileSync } from 'node:fs';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';

const file = process.env.HOLDFAST_BENCH_MEMORY_FILE;
let seq = 0;
if (file) {
  process.on('SIGUSR2', () => {
    (globalThis as { gc?: () => void }).gc?.();
    const dir = process.env.HOLDFAST_BENCH_HEAP_SNAPSHOT_DIR;
    if (dir) writeHeapSnapshot(`${dir}/probe-${seq + 1}.heapsnapshot`);
    const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
    // Committed size per V8 heap space: where RSS above the live heap sits.
    const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size]));
    writeFileSync(file, JSON.stringify({ seq: ++seq, rss, heapUsed, heapTotal, external, arrayBuffers, spaces }));
  });
}
