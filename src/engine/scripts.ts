// Loads lua/*.lua into ioredis with defineCommand, which runs them by SHA and reloads them
// after NOSCRIPT (a Redis restart). `--- @include "includes/x"` lines are pasted in at load.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import { packageRoot } from '../package-root';

export type ScriptName = 'acquire' | 'release' | 'renew' | 'claim' | 'dequeue' | 'inspect' | 'checkFencingToken' | 'requestId' | 'setValue';

const FILES: Record<ScriptName, string> = {
  acquire: 'acquire-4',
  release: 'release-4',
  renew: 'renew-3',
  claim: 'claim-4',
  dequeue: 'dequeue-4',
  inspect: 'inspect-3',
  checkFencingToken: 'check-fencing-token-3',
  requestId: 'request-id-1',
  setValue: 'set-value-4',
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

/** The command a script runs as; `onMaster`: the variant that first checks the master's run_id (last ARGV). */
export function commandName(script: ScriptName, onMaster = false): string {
  return onMaster && GRANTING.has(script) ? `holdfast_${script}_on_master` : `holdfast_${script}`;
}

export function isGranting(script: ScriptName): boolean {
  return GRANTING.has(script);
}

export function scriptKeyCount(script: ScriptName): number {
  return keyCount(FILES[script]);
}

export function defineScripts(redis: Redis | Cluster): void {
  const dir = luaDir();
  for (const [script, file] of Object.entries(FILES) as [ScriptName, string][]) {
    const lua = readScript(file, dir);
    redis.defineCommand(commandName(script), { numberOfKeys: keyCount(file), lua });
    if (GRANTING.has(script)) {
      redis.defineCommand(commandName(script, true), { numberOfKeys: keyCount(file), lua: `${readScript('includes/expect-master', dir)}\n${lua}` });
    }
  }
}
