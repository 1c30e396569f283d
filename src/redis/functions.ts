// The lock operations (src/redis/scripts.ts) as one Redis Function library, loaded by FUNCTION
// LOAD and run by FCALL. As a library the shared helpers (lua/includes/state) are made once per
// load: pasted into every EVAL script they were made again on every call, a fifth of Redis's CPU
// per acquire + release (npm run bench:redis-cost). The library is named after a hash of its
// text, so servers of different versions on one Redis each keep their own, as EVALSHA's
// content-addressed scripts did.
import { createHash } from 'node:crypto';
import { Cluster, type ChainableCommander, type Redis } from 'ioredis';
import type { ScriptName } from '../engine/scripts';
import { SCRIPT_NAMES, allowedWhenOutOfMemory, isGranting, luaDir, readScript, scriptFile } from './scripts';

/** Redis's answer to an FCALL of a function it does not have (a restart without persistence, a new node). */
export function isLibraryMissing(err: unknown): boolean {
  return /^ERR Function not found/.test((err as Error | null)?.message ?? '');
}

type Connection = Redis | Cluster;

/** What every lock function shares, in this order: the library's head, the state helpers, events, renewal. */
export const LIBRARY_INCLUDES = ['includes/library', 'includes/state', 'includes/events', 'includes/renew'];

export class LockLibrary {
  /** The library's name in Redis: holdfast_ and a hash of its text. */
  readonly name: string;
  /** The text FUNCTION LOAD is given. */
  readonly code: string;
  private readonly loading = new WeakMap<Connection, Promise<void>>();
  /** Function names worked out once, not on every call. */
  private readonly names = {} as Record<ScriptName, string>;
  private readonly onMasterNames = {} as Record<ScriptName, string>;

  constructor(dir = luaDir()) {
    const body = this.build(dir, '@');
    this.name = `holdfast_${createHash('sha1').update(body).digest('hex').slice(0, 12)}`;
    this.code = `#!lua name=${this.name}\n${this.build(dir, this.name)}`;
    for (const script of SCRIPT_NAMES) {
      this.names[script] = functionName(this.name, script, false);
      this.onMasterNames[script] = functionName(this.name, script, true);
    }
  }

  /** The LIBRARY_INCLUDES, then a register_function per operation whose body is its file. */
  private build(dir: string, prefix: string): string {
    const parts = LIBRARY_INCLUDES.map((file) => readScript(file, dir));
    const register = (script: ScriptName, onMaster: boolean) => {
      const body = `${onMaster ? `${readScript('includes/expect-master', dir)}\n` : ''}${readScript(scriptFile(script), dir)}`;
      const flags = allowedWhenOutOfMemory(script) ? "{ 'allow-oom' }" : '{}';
      return `redis.register_function{ function_name = '${functionName(prefix, script, onMaster)}', flags = ${flags}, callback = function(KEYS, ARGV)\n${body}\nend }`;
    };
    for (const script of SCRIPT_NAMES) {
      parts.push(register(script, false));
      if (isGranting(script)) parts.push(register(script, true));
    }
    return parts.join('\n');
  }

  /** The function a script runs as; `onMaster`: the variant that first checks the master's run_id (last ARGV). */
  functionName(script: ScriptName, onMaster = false): string {
    return (onMaster && isGranting(script) ? this.onMasterNames : this.names)[script];
  }

  /**
   * Loads the library onto the Redis `connection` writes to (every master of a Cluster). Calls
   * that meet while one load is under way share it; a library already there is left as it is.
   */
  load(connection: Connection): Promise<void> {
    let loading = this.loading.get(connection);
    if (!loading) {
      const masters: Redis[] = connection instanceof Cluster ? connection.nodes('master') : [connection];
      loading = Promise.all(masters.map((node) => this.loadOn(node))).then(
        () => void this.loading.delete(connection),
        (err: unknown) => {
          this.loading.delete(connection);
          throw err;
        },
      );
      this.loading.set(connection, loading);
    }
    return loading;
  }

  private async loadOn(node: Redis): Promise<void> {
    try {
      await node.call('FUNCTION', 'LOAD', this.code);
    } catch (err) {
      if (!/already exists/.test((err as Error).message)) throw err;
    }
  }

  /** Runs one function; when Redis lacks the library it is loaded and the call made once more. */
  async call(connection: Connection, script: ScriptName, keys: string[], args: (string | number)[], onMaster = false): Promise<unknown> {
    const fcall = () => connection.fcall(this.functionName(script, onMaster), keys.length, ...keys, ...args);
    try {
      return await fcall();
    } catch (err) {
      if (!isLibraryMissing(err)) throw err;
      await this.load(connection);
      return fcall();
    }
  }

  /** Adds one function call to a pipeline; whoever runs it loads the library on isLibraryMissing() and tries again. */
  queue(pipeline: ChainableCommander, script: ScriptName, keys: string[], args: (string | number)[], onMaster = false): void {
    pipeline.fcall(this.functionName(script, onMaster), keys.length, ...keys, ...args);
  }
}

function functionName(prefix: string, script: ScriptName, onMaster: boolean): string {
  return `${prefix}_${script}${onMaster ? '_on_master' : ''}`;
}

let shared: LockLibrary | undefined;

/** The library built from this package's lua/ (built on first use, then shared). */
export function lockLibrary(): LockLibrary {
  shared ??= new LockLibrary();
  return shared;
}
