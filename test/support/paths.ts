// Where the repository and its build are, from the TypeScript sources (vitest) or from any
// build of them (bench/dist, test/chaos/dist): found by the package.json, not by counting '..'.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === 'holdfast') return dir;
    if (dirname(dir) === dir) throw new Error(`no holdfast package.json above ${from}`);
  }
}

export const ROOT = findRoot(__dirname);
/** The server's CLI as built by `npm run build` (vitest's globalSetup builds it too). */
export const CLI = join(ROOT, 'dist', 'src', 'cli.js');
