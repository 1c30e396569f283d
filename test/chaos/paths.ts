// Where things are, from the TypeScript sources (vitest) or their build in test/chaos/dist.
import { join } from 'node:path';
import { CLI, ROOT } from '../support/paths';

export { CLI, ROOT };
/** The SDK the workers load: its workspace package's build (npm run build, or vitest's globalSetup). */
export const SDK = join(ROOT, 'clients', 'ts', 'dist', 'clients', 'ts', 'index.js');
/** test/chaos compiled on its own (tsconfig.json here): the worker and storage processes. */
export const CHAOS_DIST = join(ROOT, 'test', 'chaos', 'dist', 'test', 'chaos');
export const RESULTS = join(ROOT, 'bench', 'results');
