// The negative control of `npm run lint`: the repository's Biome config, run as CI runs it
// (biome ci --error-on-warnings) on a scratch tree, fails on a lint finding and on unformatted
// code, passes clean code, and skips generated code and build output.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');
const FLOATING = 'async function f() {}\nf();\n';
const FILES: Record<string, string> = {
  'src/lint.ts': `import { x } from './y';\n\n${FLOATING}`,
  'src/format.ts': 'export const a = "x"\n',
  'src/clean.ts': "export const ok = 'x';\n",
  'gen/generated.ts': FLOATING,
  'dist/built.ts': FLOATING,
};

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'holdfast-biome-'));
  for (const config of ['biome.jsonc', '.gitignore']) copyFileSync(join(ROOT, config), join(dir, config));
  for (const [file, text] of Object.entries(FILES)) {
    mkdirSync(join(dir, dirname(file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Biome as npm scripts find it: node_modules/.bin first. */
async function biome(...args: string[]): Promise<{ code: number; output: string }> {
  const env = { ...process.env, PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}` };
  try {
    const { stdout, stderr } = await promisify(execFile)('biome', [...args, '--colors=off'], { cwd: dir, env });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const { code, stdout, stderr } = err as { code: number; stdout: string; stderr: string };
    return { code, output: stdout + stderr };
  }
}

it('fails on a floating promise, an unused import and unformatted code; skips gen/ and dist/', async () => {
  const { code, output } = await biome('ci', '--error-on-warnings');
  expect(code).not.toBe(0);
  expect(output).toMatch(/src\/lint\.ts:1:\d+ lint\/correctness\/noUnusedImports/);
  expect(output).toMatch(/src\/lint\.ts:4:1 lint\/nursery\/noFloatingPromises/);
  expect(output).toMatch(/src\/format\.ts format/);
  expect(output).not.toMatch(/clean\.ts|generated\.ts|built\.ts/);
});

it('passes clean code', async () => {
  expect(await biome('ci', '--error-on-warnings', 'src/clean.ts')).toMatchObject({ code: 0 });
});

it('formats to the tree style: single quotes, semicolons', async () => {
  expect((await biome('format', '--write', 'src/format.ts')).code).toBe(0);
  expect(readFileSync(join(dir, 'src/format.ts'), 'utf8')).toBe("export const a = 'x';\n");
});
