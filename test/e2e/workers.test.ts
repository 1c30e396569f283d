// `holdfast serve --workers N`: N server processes on one port, one (embedded) Redis among them.
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

const dataDir = mkdtempSync(join(tmpdir(), 'holdfast-workers-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

interface LogLine {
  msg?: string;
  pid?: number;
  redisPid?: number;
}

describe('holdfast serve --workers', () => {
  it('serves one port from two processes sharing one embedded Redis, replaces a worker that dies, and stops everything on SIGTERM', async () => {
    const port = await freePort();
    const addr = `127.0.0.1:${port}`;
    const child = spawn(process.execPath, [CLI, 'serve', '--listen', addr, '--data-dir', dataDir, '--workers', '2'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    let output = '';
    child.stdout!.on('data', (d) => (output += d.toString()));
    const lines = () =>
      output
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as LogLine);
    const workerPids = () => [
      ...new Set(
        lines()
          .filter((l) => l.msg === 'holdfast listening')
          .map((l) => l.pid!),
      ),
    ];
    const clients = Array.from({ length: 4 }, () => connect(addr, { 'grpc.use_local_subchannel_pool': 1 }));
    try {
      await waitFor('both workers to listen', () => lines().some((l) => l.msg === 'holdfast workers listening'), 30_000);
      const redisPid = lines().find((l) => l.redisPid)!.redisPid!;
      await waitFor("both workers' own lines", () => workerPids().length === 2);
      expect(workerPids()).not.toContain(child.pid);

      // One lock state behind every connection, whichever worker it landed on.
      const name = uniqueName();
      const first = await clients[0].acquire({ name, ttlMs: '10000' });
      expect(first.acquired).toBe(true);
      for (const other of clients.slice(1)) expect((await other.acquire({ name, ttlMs: '10000' })).acquired).toBe(false);
      let holding = 0;
      let mostHolding = 0;
      const waits = clients.slice(1).map(async (c) => {
        const grant = await c.acquire({ name, ttlMs: '10000', waitTimeoutMs: '20000' });
        expect(grant.acquired).toBe(true);
        mostHolding = Math.max(mostHolding, ++holding);
        await new Promise((resolve) => setImmediate(resolve)); // the critical section
        holding--;
        await c.release({ name, token: grant.token });
      });
      await waitFor('three waiters', async () => (await clients[0].inspect({ name })).waiters === 3);
      await clients[0].release({ name, token: first.token });
      await Promise.all(waits);
      expect(mostHolding).toBe(1);

      // A worker that dies is replaced; the port keeps answering.
      const [victim] = workerPids();
      process.kill(victim, 'SIGKILL');
      await waitFor('a new worker', () => workerPids().length === 3, 30_000);
      const fresh = connect(addr, { 'grpc.use_local_subchannel_pool': 1 });
      expect((await fresh.acquire({ name: uniqueName() })).acquired).toBe(true);
      fresh.close();

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      for (const pid of [...workerPids(), redisPid]) expect(alive(pid), `pid ${pid} still runs`).toBe(false);
    } finally {
      clients.forEach((c) => c.close());
      child.kill('SIGKILL');
    }
  });

  it('refuses a worker count that is not a number or auto', async () => {
    const run = spawn(process.execPath, [CLI, 'serve', '--workers', 'many'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    run.stderr!.on('data', (d) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => run.once('exit', resolve));
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/--workers/);
  });
});
