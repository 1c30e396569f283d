// `holdfast serve` settings from a config file, HOLDFAST_* variables and flags, as a user runs it.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { connect } from '../support/client';
import { startTestRedis, uniqueName, type TestRedis } from '../support/redis';
import { CLI, startServerProcess } from '../support/server';

let dir: string;
let redis: TestRedis;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'holdfast-config-'));
  redis = await startTestRedis();
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await redis?.cleanup();
});

/** Writes `text` to a fresh file in the test's directory. */
function configFile(text: string): string {
  const path = join(dir, `${uniqueName()}.yaml`);
  writeFileSync(path, text);
  return path;
}

/** Runs `holdfast serve ARGS` with only `env` as HOLDFAST_* variables, to its exit. */
function serve(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('HOLDFAST_')));
  const child = spawn(process.execPath, [CLI, 'serve', ...args], { env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

const HASH = 'ab'.repeat(32);

describe('holdfast serve configuration', () => {
  it('takes a flag over its variable, a variable over the file, the file over the default', async () => {
    const file = configFile('default-ttl-ms: 20000\nmax-ttl-ms: 60000\nlock-delay-ms: 7\nrelease-on-disconnect: true\n');
    const run = await serve(['--config', file, '--print-config', '--lock-delay-ms', '9'], {
      HOLDFAST_MAX_TTL_MS: '70000',
      HOLDFAST_LOCK_DELAY_MS: '8',
      HOLDFAST_RELEASE_ON_DISCONNECT: 'false',
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const printed = YAML.parse(run.stdout);
    expect(printed).toMatchObject({
      'default-ttl-ms': 20000, // file
      'max-ttl-ms': 70000, // env over file
      'lock-delay-ms': 9, // flag over env and file
      'release-on-disconnect': false, // env "false" is false, over the file's true
      'keepalive-time-ms': 10000, // default
    });
    expect(run.stdout).toMatch(/^max-ttl-ms: 70000 # env$/m);
    expect(run.stdout).toMatch(/^lock-delay-ms: 9 # flag$/m);
    expect(run.stdout).toMatch(/^default-ttl-ms: 20000$/m);
  });

  it('prints the effective settings with secrets masked', async () => {
    const file = configFile(`api-keys:\n  - name: billing\n    sha256: ${HASH}\n    namespace: billing\n    role: lock\n`);
    const run = await serve(['--config', file, '--print-config'], { HOLDFAST_REDIS_URL: 'redis://app:pa55word@db.example:6379/0' });
    expect(run.code).toBe(0);
    const printed = YAML.parse(run.stdout);
    expect(printed.redis).toBe('redis://app:***@db.example:6379/0');
    expect(printed['api-keys']).toEqual([{ name: 'billing', sha256: '***', namespace: 'billing', role: 'lock' }]);
    expect(run.stdout).not.toContain('pa55word');
    expect(run.stdout).not.toContain(HASH);
  });

  it.each<{ why: string; args?: string[]; env?: Record<string, string>; file?: string; names: string }>([
    { why: 'a flag out of range', args: ['--sync-timeout-ms', '5000'], names: '--sync-timeout-ms' },
    { why: 'a flag that is not a number', args: ['--max-hold-ms', 'soon'], names: '--max-hold-ms' },
    { why: 'an unknown flag', args: ['--max-tll-ms', '5'], names: '--max-tll-ms' },
    { why: 'a variable that is not a number', env: { HOLDFAST_DEFAULT_TTL_MS: 'abc' }, names: 'HOLDFAST_DEFAULT_TTL_MS' },
    { why: 'a boolean variable that is neither', env: { HOLDFAST_FAILOVER_QUARANTINE: 'maybe' }, names: 'HOLDFAST_FAILOVER_QUARANTINE' },
    { why: 'two settings that disagree', args: ['--default-ttl-ms', '60000', '--max-ttl-ms', '50000'], names: '--max-ttl-ms' },
    { why: 'an unknown file key', file: 'max-ttl: 4\n', names: 'max-ttl in' },
    { why: 'a file key spelled in camelCase', file: 'maxTtlMs: 4\n', names: 'maxTtlMs in' },
    { why: 'a file value of the wrong type', file: 'release-on-disconnect: 1\n', names: 'release-on-disconnect in' },
    { why: 'a file value out of range', file: 'sync-timeout-ms: 0\n', names: 'sync-timeout-ms in' },
    { why: 'a file that is not YAML', file: 'listen: [\n', names: 'not valid YAML' },
    { why: 'an API key that is not a hash', file: 'api-keys:\n  - {name: a, sha256: secret, namespace: a, role: lock}\n', names: 'api-keys[0].sha256 in' },
    { why: 'an unknown role', file: `api-keys:\n  - {name: a, sha256: ${HASH}, namespace: a, role: root}\n`, names: 'api-keys[0].role in' },
    { why: 'a file setting that conflicts with a flag', args: ['--redis', 'redis://127.0.0.1:1'], file: 'redis-cluster: [a:1]\n', names: 'redis-cluster in' },
    { why: 'a missing config file', args: ['--config', '/nonexistent/holdfast.yaml'], names: '/nonexistent/holdfast.yaml' },
    { why: 'a Redis password given empty', env: { HOLDFAST_REDIS_PASSWORD: '' }, names: 'HOLDFAST_REDIS_PASSWORD' },
  ])('refuses $why with one line naming it and exit 2', async ({ args = [], env = {}, file, names }) => {
    const run = await serve([...(file ? ['--config', configFile(file)] : []), ...args, '--print-config'], env);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(names);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  // A number is refused for what is wrong with it (negative, too small, too large, a fraction),
  // never as "not a whole number" when it is one, nor in zod's words ("Too small: expected number").
  it.each<{ args?: string[]; env?: Record<string, string>; file?: string; line: string }>([
    { args: ['--default-ttl-ms', '-5'], line: "option '--default-ttl-ms <ms>' argument '-5' is invalid. must not be negative" },
    { args: ['--default-ttl-ms', '5'], line: 'invalid setting --default-ttl-ms: must be 10 or more milliseconds' },
    { args: ['--max-ttl-ms', '86400001'], line: 'invalid setting --max-ttl-ms: must be at most 86400000 milliseconds (a day)' },
    { args: ['--max-message-bytes', '0'], line: 'invalid setting --max-message-bytes: must be 1 or more' },
    { args: ['--redlock-node-timeout-ms', '0'], line: 'invalid setting --redlock-node-timeout-ms: must be 1 or more milliseconds' },
    { args: ['--keepalive-time-ms', '1.5'], line: "argument '1.5' is invalid. must be a whole number of milliseconds, not a fraction" },
    { args: ['--workers', '0'], line: "option '--workers <n|auto>' argument '0' is invalid. must be 1 or more worker processes, or auto" },
    { args: ['--sync-replicas', '-1'], line: "option '--sync-replicas <n|auto>' argument '-1' is invalid. must not be negative" },
    { env: { HOLDFAST_MAX_HOLD_MS: '-5' }, line: 'invalid setting HOLDFAST_MAX_HOLD_MS: must not be negative' },
    { file: 'max-session-ops: 0\n', line: 'invalid setting max-session-ops in ' },
  ])('refuses $line', async ({ args = [], env = {}, file, line }) => {
    const run = await serve([...(file ? ['--config', configFile(file)] : []), ...args, '--print-config'], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^holdfast: [^\n]*\n$/);
    expect(run.stderr).toContain(line);
    if (file) expect(run.stderr).toMatch(/: must be 1 or more\n$/);
    expect(run.stderr).not.toMatch(/Too (small|big)|expected number|expected a whole number/);
  });

  it('serves as its config file says', async () => {
    const file = configFile(`redis: ${redis.url}\ndefault-ttl-ms: 12345\n`);
    const server = await startServerProcess(undefined, ['--config', file]);
    const client = connect(server.addr);
    try {
      const grant = await client.acquire({ name: uniqueName() });
      expect(grant).toMatchObject({ acquired: true, ttlMs: '12345' });
      expect(server.logs.join('\n')).not.toMatch(/embedded redis-server/);
    } finally {
      client.close();
      await server.stop();
    }
  });
});
