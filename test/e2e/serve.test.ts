// `holdfast serve` as a user runs it: the embedded redis-server child, env configuration,
// a missing redis-server binary.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect, createServer, type AddressInfo } from 'node:net';
import { type ServiceError, status } from '@grpc/grpc-js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/redis/embedded';
import { connect } from '../support/client';
import { healthStatus } from '../support/health';
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
async function serveEmbedded(port: number, dir = dataDir) {
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, HOLDFAST_LISTEN: `127.0.0.1:${port}`, HOLDFAST_DATA_DIR: dir },
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
  return { child, exited, started, addr: `127.0.0.1:${port}`, output: () => output };
}

/** `holdfast serve ARGS` run to its exit (it is expected to refuse to start). */
async function refusedServe(args: string[]) {
  const child = spawn(process.execPath, [CLI, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => {
    stdout += d.toString();
    if (/holdfast (workers )?listening/.test(stdout)) child.kill('SIGTERM'); // not refused: stop it, the test fails
  });
  child.stderr!.on('data', (d) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, stdout, stderr };
}

/** The processes (zombies aside) whose command line names `dir`, and `program` first when given. */
function processesIn(dir: string, program = ''): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        return cmdline.startsWith(program) && cmdline.includes(dir) && alive(Number(pid));
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

/** Whether something accepts connections on the loopback port. */
function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Holds a loopback port, as another program would; resolves with it. */
async function takenPort(): Promise<{ port: number; close(): Promise<void> }> {
  const other = createServer();
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  return { port: (other.address() as AddressInfo).port, close: () => new Promise<void>((resolve) => other.close(() => resolve())) };
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
  it('refuses a second server on its data dir in one line naming the first, which goes on serving; a SIGKILLed one blocks nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'holdfast-serve-lock-'));
    const first = await serveEmbedded(await freePort(), dir);
    let third: Awaited<ReturnType<typeof serveEmbedded>> | undefined;
    try {
      for (const extra of [[], ['--workers', '2']]) {
        const second = await refusedServe(['--listen', `127.0.0.1:${await freePort()}`, '--data-dir', dir, ...extra]);
        expect(second.code).toBe(1);
        expect(second.stderr).toBe(
          `holdfast: data dir ${dir} is in use by another holdfast serve (pid ${first.child.pid}, listening on ${first.addr}): stop that server, or give this one another --data-dir\n`,
        );
        expect(second.stdout).not.toMatch(/embedded redis-server/);
      }
      // The first server and its redis-server were not touched: it still grants.
      expect(alive(first.started.redisPid)).toBe(true);
      const client = connect(first.addr);
      expect((await client.acquire({ name: uniqueName() })).acquired).toBe(true);
      client.close();

      // A crash leaves the lock file and the redis-server behind; the next server takes both over.
      first.child.kill('SIGKILL');
      await first.exited;
      expect(alive(first.started.redisPid)).toBe(true);
      expect(readFileSync(join(dir, 'holdfast.lock'), 'utf8')).toContain(`"pid":${first.child.pid}`);
      const port = await freePort();
      third = await serveEmbedded(port, dir);
      expect(alive(first.started.redisPid)).toBe(false); // the leftover, stopped as before
      const again = connect(`127.0.0.1:${port}`);
      expect((await again.acquire({ name: uniqueName() })).acquired).toBe(true);
      again.close();
      third.child.kill('SIGTERM');
      expect(await third.exited).toBe(0);
      expect(existsSync(join(dir, 'holdfast.lock'))).toBe(false); // given up on a clean stop
    } finally {
      first.child.kill('SIGKILL');
      third?.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['--listen', (port: number) => ['--listen', `127.0.0.1:${port}`]],
    ['--http-listen', (port: number) => ['--listen', '127.0.0.1:0', '--http-listen', `127.0.0.1:${port}`]],
    ['--listen, under --workers', (port: number) => ['--listen', `127.0.0.1:${port}`, '--workers', '2']],
  ])('refuses a %s port in use in one line, before it starts a redis-server', async (option, args) => {
    const other = await takenPort();
    const dir = mkdtempSync(join(tmpdir(), 'holdfast-serve-port-'));
    try {
      const run = await refusedServe([...args(other.port), '--data-dir', dir]);
      expect(run.code).toBe(1);
      const flag = option.split(',')[0];
      expect(run.stderr).toBe(`holdfast: cannot listen on 127.0.0.1:${other.port} (${flag}): the port is in use by another process\n`);
      // Nothing was started: no redis-server ran on the data dir (it would have made redis/), none is left.
      expect(run.stdout).not.toMatch(/embedded redis-server/);
      expect(readdirSync(dir)).toEqual([]);
      expect(processesIn(dir, 'redis-server')).toEqual([]);
    } finally {
      await other.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('holds its port while the embedded Redis starts: health NOT_SERVING, lock calls wait, then it serves them', async () => {
    // A redis-server that starts only when the test says so: the start lasts as long as the test needs.
    const dir = mkdtempSync(join(tmpdir(), 'holdfast-serve-start-'));
    const realRedis = execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim();
    const go = join(dir, 'go');
    execFileSync('mkfifo', [go]);
    mkdirSync(join(dir, 'bin'));
    writeFileSync(
      join(dir, 'bin', 'redis-server'),
      `#!/bin/sh\n[ "$1" = --version ] && exec ${realRedis} --version\nread line < ${go}\nexec ${realRedis} "$@"\n`,
      { mode: 0o755 },
    );
    const port = await freePort();
    const child = spawn(process.execPath, [CLI, 'serve', '--listen', `127.0.0.1:${port}`, '--data-dir', join(dir, 'data')], {
      env: { ...process.env, PATH: `${join(dir, 'bin')}:${process.env.PATH}` },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout!.on('data', (d) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const client = connect(`127.0.0.1:${port}`);
    try {
      await waitFor('the port to be bound', () => isListening(port));
      expect(await healthStatus(`127.0.0.1:${port}`)).toBe('NOT_SERVING');
      // A call waits for the start (as for a server not yet listening), up to its own deadline:
      // the redis-server is held back, so this one can only end by that deadline.
      const early = await client.inspect({ name: uniqueName() }, 1000).then(
        () => undefined,
        (err: ServiceError) => err,
      );
      expect(early?.code).toBe(status.DEADLINE_EXCEEDED);
      const waiting = client.acquire({ name: uniqueName() }, 60_000);
      expect(output).not.toMatch(/holdfast listening/);

      writeFileSync(go, 'go\n'); // the redis-server starts
      expect((await waiting).acquired).toBe(true);
      await waitFor('the server to log that it listens', () => output.includes('holdfast listening'));
      expect(await healthStatus(`127.0.0.1:${port}`)).toBe('SERVING');
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      client.close();
      child.kill('SIGKILL');
      for (const pid of processesIn(dir)) process.kill(pid, 'SIGKILL'); // a redis-server still held back
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
