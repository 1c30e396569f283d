import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

let root: string | undefined;

/** The holdfast package folder (holding lua/ and proto/), from src/ in tests and dist/src/ when built. */
export function packageRoot(): string {
  if (root) return root;
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'lua', 'acquire-4.lua')) && existsSync(join(dir, 'proto'))) return (root = dir);
  }
  throw new Error(`the holdfast package folder was not found above ${__dirname}`);
}
