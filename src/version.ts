// holdfast's version: the one in its package.json (the folder packageRoot finds).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './package-root';

let version: string | undefined;

export function holdfastVersion(): string {
  version ??= (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  return version;
}
