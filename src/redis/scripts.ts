// The lock operations as Lua files: which lua/<operation>-<keys>.lua each one is, how many keys it
// takes, and what Redis may run it under; read from this package's lua/ folder. The function
// library (functions.ts) is built from them, and Redlock's masters run the redlock-*.lua files.
// `--- @include "includes/x"` lines are pasted in when read.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ScriptName } from '../engine/scripts';
import { packageRoot } from '../package-root';

const FILES: Record<ScriptName, string> = {
  acquire: 'acquire-4',
  release: 'release-4',
  renew: 'renew-3',
  // Many leases per call, 3 keys each (the watchdog's renewals of one tick).
  renewBatch: 'renew-batch-3',
  claim: 'claim-4',
  dequeue: 'dequeue-4',
  inspect: 'inspect-3',
  checkFencingToken: 'check-fencing-token-3',
  requestId: 'request-id-1',
  setValue: 'set-value-4',
  noteWait: 'note-wait-1',
  forgetWait: 'forget-wait-1',
  waitsOf: 'waits-of-1',
  waitEdge: 'wait-edge-3',
  abortWait: 'abort-wait-4',
};

export function luaDir(): string {
  return join(packageRoot(), 'lua');
}

const INCLUDE = /^--- @include "([\w/-]+)"$/gm;

export function readScript(file: string, dir = luaDir()): string {
  return readFileSync(join(dir, `${file}.lua`), 'utf8').replace(INCLUDE, (_, inc: string) => readScript(inc, dir));
}

/** The number of KEYS a script file declares in its name (BullMQ's verb-N.lua). */
export function keyCount(file: string): number {
  return Number(/-(\d+)$/.exec(file)![1]);
}

export function scriptFiles(dir = luaDir()): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.lua'))
    .map((f) => f.slice(0, -4));
}

/** Scripts that grant: on a Cluster with the quarantine they run only on the checked master. */
const GRANTING: ReadonlySet<ScriptName> = new Set(['acquire', 'claim']);

/**
 * Functions that may run while Redis is out of memory (maxmemory, noeviction): they free or only
 * read, and a release refused then would keep a lock closed until its lease ends. (EVAL scripts
 * had this by default: Redis checked each command they called, not the script.)
 */
const ALLOWED_WHEN_OUT_OF_MEMORY: ReadonlySet<ScriptName> = new Set([
  'release',
  'dequeue',
  'inspect',
  'checkFencingToken',
  'forgetWait',
  'waitsOf',
  'waitEdge',
  'abortWait',
]);

/** Every operation, in the order the library registers them. */
export const SCRIPT_NAMES = Object.keys(FILES) as ScriptName[];

/** The lua/ file (without .lua) an operation runs. */
export function scriptFile(script: ScriptName): string {
  return FILES[script];
}

export function allowedWhenOutOfMemory(script: ScriptName): boolean {
  return ALLOWED_WHEN_OUT_OF_MEMORY.has(script);
}

export function isGranting(script: ScriptName): boolean {
  return GRANTING.has(script);
}

export function scriptKeyCount(script: ScriptName): number {
  return keyCount(FILES[script]);
}
