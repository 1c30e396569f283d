// Every example under examples/ in its short mode (--short): each is a real program that starts
// its own redis-server and holdfast servers, runs its scenario and checks it, exiting 0 only if
// every check passed.
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');
const TSC = join(ROOT, 'node_modules', '.bin', 'tsc');

function runExample(name: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'examples', 'dist', 'examples', name, 'main.js'), '--short'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })));
}

beforeAll(() => {
  execFileSync(TSC, ['-p', join(ROOT, 'examples', 'tsconfig.json')], { cwd: ROOT, stdio: 'inherit' });
}, 120_000);

describe('examples (short mode)', () => {
  it.each(['singleton-job', 'market', 'read-mostly-config', 'fenced-storage'])(
    '%s runs and passes its checks',
    async (name) => {
      const { code, output } = await runExample(name);
      expect(output).not.toContain('FAILED');
      expect(output).toContain('ok: ');
      expect(code, output).toBe(0);
    },
    180_000,
  );
});
