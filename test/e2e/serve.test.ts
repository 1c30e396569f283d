// `holdfast serve` as a user runs it: the embedded redis-server child, env configuration,
// a missing redis-server binary.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/redis/embedded';
import { connect } from '../support/client';
import { uniqueName } from '../support/redis';
import { CLI } from '../support/server';
import { waitFor } from '../support/wait';

const dataDir = mkdtempSync(join(tmpdir(), 'holdfast-serve-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Running, and not a zombie waiting for PID 1 to reap it (an orphan's fate once it exits). */
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

/** `holdfast serve` with the embedded Redis, configured through env; resolves once it listens. */
async function serveEmbedded(port: number) {
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, HOLDFAST_LISTEN: `127.0.0.1:${port}`, HOLDFAST_DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let output = '';
  child.stdout!.on('data', (d) => (output += d.toString()));
  await waitFor('the server to listen', () => output.includes('holdfast listening'), 20_000);
  const started = output
    .split('\n')
    .map((l) => (l.startsWith('{') ? JSON.parse(l) : {}))
    .find((l) => /embedded redis-server/.test(l.msg));
  return { child, exited, started, output: () => output };
}

describe('holdfast serve', () => {
  it('starts its own redis-server child by default (configured by env), and stops it on SIGTERM', async () => {
    const port = await freePort();
    const { child, exited, started, output } = await serveEmbedded(port);
    try {
      expect(started).toMatchObject({ redisPid: expect.any(Number), dataDir: join(dataDir, 'redis') });
      expect(alive(started.redisPid)).toBe(true);

      const client = connect(`127.0.0.1:${port}`);
      const grant = await client.acquire({ name: uniqueName() });
      expect(grant.acquired).toBe(true);
      client.close();

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(output()).toMatch(/stopped embedded redis-server/);
      expect(alive(started.redisPid)).toBe(false);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('stops the redis-server a SIGKILLed server left behind before starting a new one', async () => {
    const first = await serveEmbedded(await freePort());
    first.child.kill('SIGKILL');
    await first.exited;
    expect(alive(first.started.redisPid)).toBe(true); // orphaned: nobody stopped it

    const port = await freePort();
    const second = await serveEmbedded(port);
    try {
      expect(alive(first.started.redisPid)).toBe(false);
      expect(second.started.redisPid).not.toBe(first.started.redisPid);
      const client = connect(`127.0.0.1:${port}`);
      expect((await client.acquire({ name: uniqueName() })).acquired).toBe(true);
      client.close();
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
    expect(alive(second.started.redisPid)).toBe(false);
  });

  it('exits with a one-line message saying how to install redis-server when it is missing', async () => {
    const child = spawn(process.execPath, [CLI, 'serve', '--listen', `127.0.0.1:${await freePort()}`, '--data-dir', dataDir], {
      env: { ...process.env, PATH: '/nonexistent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/redis-server not found.*apt-get install -y redis-server/);
  });
});
