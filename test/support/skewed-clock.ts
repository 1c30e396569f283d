// Builds test/support/skewed-clock.c into a shared object (once per run, with the system's C
// compiler) and gives the environment that starts a process with its wall clock shifted.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let built: string | undefined;

function skewedClockLibrary(): string {
  if (!built) {
    const out = join(mkdtempSync(join(tmpdir(), 'holdfast-clock-')), 'skewed-clock.so');
    execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', out, join(__dirname, 'skewed-clock.c')]);
    built = out;
  }
  return built;
}

/** Environment for a child whose wall clock runs `ms` milliseconds ahead (negative: behind). */
export function skewedClockEnv(ms: number): NodeJS.ProcessEnv {
  return { LD_PRELOAD: skewedClockLibrary(), SKEWED_CLOCK_MS: String(Math.round(ms)) };
}
