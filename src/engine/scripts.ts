// Loads lua/*.lua into ioredis with defineCommand, which runs them by SHA and reloads them
// after NOSCRIPT (a Redis restart). `--- @include "includes/x"` lines are pasted in at load.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';

export type ScriptName = 'acquire' | 'release' | 'renew' | 'claim' | 'dequeue' | 'inspect' | 'checkFencingToken';

const FILES: Record<ScriptName, string> = {
  acquire: 'acquire-4',
  release: 'release-4',
  renew: 'renew-3',
  claim: 'claim-4',
  dequeue: 'dequeue-4',
  inspect: 'inspect-3',
  checkFencingToken: 'check-fencing-token-3',
};

/** Finds the lua/ folder from both src/ (tests) and dist/src/ (the built server). */
export function luaDir(): string {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const candidate = join(dir, 'lua');
    if (existsSync(join(candidate, 'acquire-4.lua'))) return candidate;
  }
  throw new Error(`lua/ not found above ${__dirname}`);
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

export function commandName(script: ScriptName): string {
  return `holdfast_${script}`;
}

export function scriptKeyCount(script: ScriptName): number {
  return keyCount(FILES[script]);
}

export function defineScripts(redis: Redis | Cluster): void {
  const dir = luaDir();
  for (const [script, file] of Object.entries(FILES) as [ScriptName, string][]) {
    redis.defineCommand(commandName(script), { numberOfKeys: keyCount(file), lua: readScript(file, dir) });
  }
}
