// The Node-version check (scripts/check-engines.mjs) as `npm test` runs it, a real child process:
// the repository's own lock passes; the lock entries that made npm ci warn EBADENGINE
// (puppeteer-core 25.16.0 and @puppeteer/browsers 3.2.6, Node >=22.12.0) fail it, each named
// (the negative control); and so does a README that promises no Node version.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function check(root: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, 'scripts', 'check-engines.mjs'), '--root', root], (err, stdout, stderr) =>
      resolve({ code: err ? Number(err.code) : 0, output: stdout + stderr }),
    );
  });
}

/** A repository of a README and a lock holding these package entries. */
function repo(readme: string, packages: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-engines-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'README.md'), readme);
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ name: 'demo', lockfileVersion: 3, packages }));
  return dir;
}

const README = 'On a fresh Debian machine with Node 20 (as root):\n';
const ROOT_ENTRY = { '': { name: 'demo', version: '0.1.0', engines: { node: '>=20' } } };
/** The entries as the lock held them before the change (copied from it). */
const OLD_PUPPETEER = {
  'node_modules/puppeteer-core': { version: '25.16.0', dev: true, license: 'Apache-2.0', engines: { node: '>=22.12.0' } },
  'node_modules/@puppeteer/browsers': { version: '3.2.6', dev: true, license: 'Apache-2.0', engines: { node: '>=22.12.0' } },
};

describe('check-engines', () => {
  it("passes the repository's own package-lock.json", async () => {
    const { code, output } = await check(ROOT);
    expect(output).toMatch(/^check-engines: all \d+ engines\.node ranges in package-lock\.json accept Node 20, from 20\.\d+\.\d+ on/);
    expect(code, output).toBe(0);
  });

  it('fails on the puppeteer-core 25 entries that want Node >= 22.12, naming each', async () => {
    const { code, output } = await check(repo(README, { ...ROOT_ENTRY, ...OLD_PUPPETEER }));
    expect(code, output).toBe(1);
    expect(output).toContain(
      'package-lock.json: node_modules/puppeteer-core@25.16.0 wants Node ">=22.12.0", which no Node 20 release satisfies (README.md says Node 20)',
    );
    expect(output).toContain('node_modules/@puppeteer/browsers@3.2.6 wants Node ">=22.12.0"');
    expect(output).toContain('check-engines: 2 problem(s)');
  });

  it('passes ranges some Node 20 release meets, and says from which release on', async () => {
    const { code, output } = await check(
      repo(README, {
        ...ROOT_ENTRY,
        'node_modules/vite': { version: '7.0.0', engines: { node: '^20.19.0 || >=22.12.0' } },
        'node_modules/old': { version: '1.0.0', engines: ['node >=0.6'] },
      }),
    );
    expect(output).toContain('check-engines: all 3 engines.node ranges in package-lock.json accept Node 20, from 20.19.0 on (node_modules/vite@7.0.0)');
    expect(code, output).toBe(0);
  });

  it('fails when the README names no Node version', async () => {
    const { code, output } = await check(repo('# demo\n', ROOT_ENTRY));
    expect(output).toContain('README.md: no "with Node N" found');
    expect(code).toBe(1);
  });
});
