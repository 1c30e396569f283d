// The holdfast client commands (exec, acquire, release, renew, inspect, status): the built CLI as
// a real child process against a real server process on a real redis-server.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient } from '../../clients/ts/index';
import { useServers } from '../support/fixture';
import { deleteLockState, uniqueName, type TestRedis } from '../support/redis';
import { CLI, startServerProcess, type ServerProcess } from '../support/server';
import { startTcpProxy } from '../support/tcp-proxy';

const env = useServers(1);
let redis: TestRedis;
let server: ServerProcess;
let client: HoldfastClient;
let dir: string;

beforeAll(() => {
  [redis, server] = [env.redis, env.servers[0]];
  client = new HoldfastClient(server.addr);
  dir = mkdtempSync(join(tmpdir(), 'holdfast-cli-'));
});
afterAll(() => {
  client?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface Run {
  child: ChildProcess;
  /** Resolves once stdout has a line matching `pattern`. */
  line(pattern: RegExp): Promise<void>;
  done: Promise<Finished>;
}

function holdfast(...args: string[]): Run {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, HOLDFAST_ADDR: server.addr }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const watchers = new Set<() => void>();
  child.stdout!.on('data', (chunk) => {
    stdout += chunk;
    for (const watch of [...watchers]) watch();
  });
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const done = new Promise<Finished>((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
  const line = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const watch = () => {
        if (!stdout.split('\n').some((l) => pattern.test(l))) return;
        watchers.delete(watch);
        resolve();
      };
      watchers.add(watch);
      watch();
      void done.then((end) => watchers.has(watch) && reject(new Error(`exited (${end.code}) without printing ${pattern}:\n${end.stdout}\n${end.stderr}`)));
    });
  return { child, line, done };
}

describe('holdfast exec', () => {
  it('serialises two concurrent commands on one lock', async () => {
    const name = uniqueName();
    const file = join(dir, `${name}.log`);
    const script = 'for i in 1 2 3 4 5; do echo "$0 $i" >> "$1"; sleep 0.05; done';
    const runs = ['a', 'b'].map((id) => holdfast('exec', name, '--wait-ms', '30000', '--', 'sh', '-c', script, id, file).done);
    expect((await Promise.all(runs)).map((r) => r.code)).toEqual([0, 0]);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    const first = lines[0].split(' ')[0];
    const second = first === 'a' ? 'b' : 'a';
    expect(lines).toEqual([...[1, 2, 3, 4, 5].map((i) => `${first} ${i}`), ...[1, 2, 3, 4, 5].map((i) => `${second} ${i}`)]);
  });

  it("exits with the command's exit code, or 128+signal, and frees the lock", async () => {
    const name = uniqueName();
    expect((await holdfast('exec', name, '--', 'sh', '-c', 'exit 7').done).code).toBe(7);
    expect((await holdfast('exec', name, '--', 'sh', '-c', 'kill -KILL $$').done).code).toBe(128 + 9);
    expect((await client.inspect(name)).holders).toEqual([]);
  });

  it('passes the lock name, fencing token and lease expiry to the command', async () => {
    const name = uniqueName();
    const run = holdfast('exec', name, '--ttl-ms', '20000', '--', 'sh', '-c', 'echo "$HOLDFAST_LOCK_NAME $HOLDFAST_FENCING_TOKEN $HOLDFAST_LEASE_EXPIRES_AT"');
    const { code, stdout } = await run.done;
    expect(code).toBe(0);
    const [lockName, fencingToken, expiresAt] = stdout.trim().split(' ');
    expect(lockName).toBe(name);
    expect(BigInt(fencingToken)).toBe((await client.inspect(name)).fencingToken);
    expect(Number(expiresAt)).toBeGreaterThan(Date.now());
    expect(Number(expiresAt)).toBeLessThanOrEqual(Date.now() + 20_000);
  });

  it('stops the command and exits 76 when the lease is lost', async () => {
    const name = uniqueName();
    const started = performance.now();
    const run = holdfast('exec', name, '--ttl-ms', '1500', '--', 'sh', '-c', 'echo started; exec sleep 30');
    await run.line(/^started$/);
    await deleteLockState(redis, name);
    const { code, stderr } = await run.done;
    expect(code).toBe(76);
    expect(stderr).toContain(`lost lock "${name}"`);
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  it('exits 76 without running the command when the grant arrives after its lease could have ended', async () => {
    // A server that gives up on a stalled connection quickly, behind a proxy that can stall.
    const quick = await startServerProcess(redis.url, ['--keepalive-time-ms', '200', '--keepalive-timeout-ms', '300']);
    const proxy = await startTcpProxy(quick.addr);
    const direct = new HoldfastClient(quick.addr);
    try {
      const name = uniqueName();
      const first = await direct.acquire(name, { ttlMs: 30_000 });
      const run = holdfast('exec', name, '--addr', proxy.addr, '--owner', 'late', '--ttl-ms', '300', '--wait-ms', '20000', '--', 'sh', '-c', 'echo ran');
      await expect.poll(async () => (await direct.inspect(name)).waiters, { timeout: 15_000 }).toBe(1);
      proxy.stall(); // the grant is made, but its answer is held back past the lease
      await first.release();
      await expect.poll(async () => (await direct.inspect(name)).holders.map((h) => h.owner), { timeout: 15_000 }).toEqual(['late']);
      await direct.acquire(name, { ttlMs: 30_000, waitMs: 20_000, owner: 'taker' });
      proxy.resume();
      const { code, stdout, stderr } = await run.done;
      expect(code).toBe(76);
      expect(stdout).toBe('');
      expect(stderr).toContain(`lost lock "${name}"`);
    } finally {
      direct.close();
      await proxy.close();
      await quick.stop();
    }
  });

  it('sends SIGKILL after --grace-ms to a command that ignores SIGTERM', async () => {
    const name = uniqueName();
    const run = holdfast('exec', name, '--ttl-ms', '1500', '--grace-ms', '500', '--', 'sh', '-c', 'trap "" TERM; echo started; while :; do sleep 0.1; done');
    await run.line(/^started$/);
    await deleteLockState(redis, name);
    expect((await run.done).code).toBe(76);
  });

  it('forwards SIGTERM to the command and releases the lock when it exits', async () => {
    const name = uniqueName();
    const run = holdfast('exec', name, '--', 'sh', '-c', 'trap "exit 9" TERM; echo started; while :; do sleep 0.1; done');
    await run.line(/^started$/);
    expect((await client.inspect(name)).holders).toHaveLength(1);
    run.child.kill('SIGTERM');
    expect((await run.done).code).toBe(9);
    expect((await client.inspect(name)).holders).toEqual([]);
  });

  it('stops waiting and exits 130 on SIGINT before the lock is granted', async () => {
    const name = uniqueName();
    await client.acquire(name, { ttlMs: 30_000 });
    const run = holdfast('exec', name, '--wait-ms', '30000', '--', 'sh', '-c', 'echo ran');
    await expect.poll(async () => (await client.inspect(name)).waiters, { timeout: 15_000 }).toBe(1);
    run.child.kill('SIGINT');
    const { code, stdout } = await run.done;
    expect(code).toBe(130);
    expect(stdout).toBe('');
    await expect.poll(async () => (await client.inspect(name)).waiters, { timeout: 15_000 }).toBe(0);
  });

  it('prints one line and exits 75 when the lock stays taken', async () => {
    const name = uniqueName();
    await client.acquire(name, { ttlMs: 30_000 });
    const { code, stdout, stderr } = await holdfast('exec', name, '--wait-ms', '300', '--', 'sh', '-c', 'echo ran').done;
    expect(code).toBe(75);
    expect(stdout).toBe('');
    expect(stderr).toBe(`holdfast: lock "${name}" was not acquired within 300 ms\n`);
  });

  it('exits 127 when the command does not exist', async () => {
    const { code, stderr } = await holdfast('exec', uniqueName(), '--', 'holdfast-no-such-command').done;
    expect(code).toBe(127);
    expect(stderr).toContain('holdfast-no-such-command');
  });
});

describe('one-shot commands', () => {
  it('acquire, inspect, renew and release round-trip as JSON', async () => {
    const name = uniqueName();
    const acquired = await holdfast('acquire', name, '--owner', 'cli', '--ttl-ms', '20000').done;
    expect(acquired.code).toBe(0);
    const grant = JSON.parse(acquired.stdout);
    expect(grant).toMatchObject({ acquired: true, ttlMs: '20000', holdCount: 1 });

    const refused = await holdfast('acquire', name).done;
    expect(refused.code).toBe(75);
    expect(JSON.parse(refused.stdout)).toMatchObject({ acquired: false });

    const inspected = JSON.parse((await holdfast('inspect', name).done).stdout);
    expect(inspected).toMatchObject({ name, waiters: 0, fencingToken: grant.fencingToken, limit: 1 });
    expect(inspected.holders).toEqual([
      { owner: 'cli', fencingToken: grant.fencingToken, ttlMs: expect.any(String), holdCount: 1, mode: 'LOCK_MODE_EXCLUSIVE', value: '' },
    ]);

    const renewed = await holdfast('renew', name, '--token', grant.token, '--ttl-ms', '40000').done;
    expect(JSON.parse(renewed.stdout)).toEqual({ ttlMs: '40000', signedFence: '' });

    const released = await holdfast('release', name, '--token', grant.token).done;
    expect(released.code).toBe(0);
    expect(JSON.parse(released.stdout)).toEqual({ released: true, holdCount: 0 });

    const again = await holdfast('release', name, '--token', grant.token).done;
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^holdfast: NOT_FOUND: .*\n$/);
  });

  it('watch prints the state, then each change as it happens, until interrupted', async () => {
    const name = uniqueName();
    const watch = holdfast('watch', name);
    await watch.line(/ state \| now: free, 0 waiting$/);
    const acquired = await holdfast('acquire', name, '--owner', 'cli-w', '--ttl-ms', '20000', '--value', 'host-1:80').done;
    const grant = JSON.parse(acquired.stdout);
    await watch.line(new RegExp(`granted fence=${grant.fencingToken} owner="cli-w" exclusive value="host-1:80" \\| now: \\[fence=`));
    await holdfast('release', name, '--token', grant.token).done;
    await watch.line(/ released fence=\d+ owner="cli-w" exclusive value="host-1:80" \| now: free, 0 waiting$/);
    watch.child.kill('SIGINT');
    const { code, stdout } = await watch.done;
    expect(code).toBe(0);
    expect(stdout).not.toContain(grant.token);
    const json = holdfast('watch', name, '--json');
    await json.line(/"event":"WATCH_EVENT_STATE"/);
    json.child.kill('SIGINT');
    expect((await json.done).code).toBe(0);
  });

  it('reports bad input as the server’s INVALID_ARGUMENT', async () => {
    const { code, stderr } = await holdfast('acquire', uniqueName(), '--ttl-ms', '5').done;
    expect(code).toBe(1);
    expect(stderr).toMatch(/^holdfast: INVALID_ARGUMENT: .*ttl_ms/);
  });

  it('status prints a table of holders and waiters, each lock with its kind', async () => {
    const held = uniqueName();
    const free = uniqueName();
    const counted = uniqueName();
    const lock = await client.acquire(held, { owner: 'status-owner', ttlMs: 30_000 });
    const place = await client.acquire(counted, { owner: 'status-owner', ttlMs: 30_000, limit: 3 });
    const { code, stdout } = await holdfast('status', held, free, counted).done;
    expect(code).toBe(0);
    const rows = stdout
      .trim()
      .split('\n')
      .map((row) => row.split(/\s{2,}/));
    expect(rows[0]).toEqual(['LOCK', 'OWNER', 'KIND', 'FENCING', 'TTL LEFT', 'HOLDS', 'WAITERS']);
    expect(rows[1]).toEqual([held, 'status-owner', 'exclusive', String(lock.fencingToken), expect.stringMatching(/^\d+\.\ds$/), '1', '0']);
    expect(rows[2]).toEqual([free, '-', 'free', '-', '-', '-', '0']);
    expect(rows[3]).toEqual([counted, 'status-owner', 'semaphore, 1 of 3', String(place.fencingToken), expect.stringMatching(/^\d+\.\ds$/), '1', '0']);
  });
});
