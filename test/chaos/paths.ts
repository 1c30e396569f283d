// Where things are, from the TypeScript sources (vitest) or their build in test/chaos/dist.
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
/** The SDK the workers load: the @holdfast/client package's own build (npm run build, or vitest's globalSetup). */
export const SDK = join(ROOT, 'clients', 'ts', 'dist', 'index.js');
export const CLI = join(ROOT, 'dist', 'src', 'cli.js');
/** test/chaos compiled on its own (tsconfig.json here): the worker and storage processes. */
export const CHAOS_DIST = join(ROOT, 'test', 'chaos', 'dist', 'test', 'chaos');
export const RESULTS = join(ROOT, 'bench', 'results');
