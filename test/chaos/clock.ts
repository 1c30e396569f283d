// One clock for the whole chaos run: CLOCK_MONOTONIC, read as process.hrtime.bigint(). On Linux
// it is one system-wide clock, so readings from the workers, the storage service and the
// orchestrator compare directly (run.ts checks that with a round trip to each process).
// performance.now() counts from this process's own start on the same clock, so a
// performance.now() moment (the SDK's lease deadlines) converts with one fixed offset.

/** Milliseconds on the machine-wide monotonic clock. */
export function monoNow(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** monoNow() - performance.now(), measured once: both read the same clock, only the origin differs. */
function measureOffset(): number {
  let best = Infinity;
  let offset = 0;
  for (let i = 0; i < 5; i++) {
    const before = process.hrtime.bigint();
    const perf = performance.now();
    const after = process.hrtime.bigint();
    const spread = Number(after - before);
    if (spread < best) {
      best = spread;
      offset = Number(before + after) / 2e6 - perf;
    }
  }
  return offset;
}

const PERF_TO_MONO = measureOffset();

/** A performance.now() moment of this process on the machine-wide monotonic clock (ms). */
export function perfToMono(perf: number): number {
  return perf + PERF_TO_MONO;
}

export interface ClockSample {
  process: string;
  before: number;
  reading: number;
  after: number;
}

/** True when another process's reading lies between ours taken before asking and after the answer. */
export function consistent(sample: ClockSample): boolean {
  return sample.before <= sample.reading && sample.reading <= sample.after;
}
