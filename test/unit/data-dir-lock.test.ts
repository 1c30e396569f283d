// The data dir's lock file (src/redis/data-dir-lock.ts) on real files and real processes: who
// counts as its live owner (refused, named), and which records are stale (taken over): a dead
// pid, a pid reused by a process started at another time, an exited process not yet reaped.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DataDirInUse, LOCK_FILE, lockDataDir } from '../../src/redis/data-dir-lock';
import { waitFor } from '../support/wait';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-lock-'));
  dirs.push(dir);
  return dir;
}

/** The kernel's start time of `pid` (field 22 of /proc/PID/stat). */
const startTime = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
};

function writeOwner(dir: string, owner: Record<string, unknown>): void {
  writeFileSync(join(dir, LOCK_FILE), `${JSON.stringify({ host: hostname(), listen: '127.0.0.1:50051', ...owner })}\n`);
}

/** The error lockDataDir throws, or undefined when it took the lock. */
function refusal(dir: string): DataDirInUse | undefined {
  try {
    lockDataDir(dir, '127.0.0.1:1').release();
    return undefined;
  } catch (err) {
    if (err instanceof DataDirInUse) return err;
    throw err;
  }
}

/** A child process that lives until killed, and its exit. */
async function otherProcess() {
  const child = spawn('sleep', ['300'], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('spawn', resolve));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return { pid: child.pid!, kill: () => child.kill('SIGKILL'), exited };
}

describe('the data dir lock', () => {
  it('is held for the life of the lock, says where the server listens, and is gone once released', () => {
    const dir = dataDir();
    const lock = lockDataDir(dir, '127.0.0.1:0');
    lock.update('127.0.0.1:4321');
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'))).toEqual({
      pid: process.pid,
      started: startTime(process.pid),
      host: hostname(),
      listen: '127.0.0.1:4321',
    });
    lock.release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
    lock.release(); // once only
  });

  it("refuses a live process's lock, naming its pid and address", async () => {
    const dir = dataDir();
    const other = await otherProcess();
    try {
      writeOwner(dir, { pid: other.pid, started: startTime(other.pid), listen: '127.0.0.1:7777' });
      const refused = refusal(dir);
      expect(refused?.message).toBe(
        `data dir ${dir} is in use by another holdfast serve (pid ${other.pid}, listening on 127.0.0.1:7777): stop that server, or give this one another --data-dir`,
      );
      expect(readFileSync(join(dir, LOCK_FILE), 'utf8')).toContain(`"pid":${other.pid}`); // untouched
    } finally {
      other.kill();
    }
  });

  it('refuses a lock from another host (whose processes it cannot see), naming the host', () => {
    const dir = dataDir();
    writeOwner(dir, { pid: 1, host: 'elsewhere.example' });
    expect(refusal(dir)?.message).toContain('(pid 1 on host elsewhere.example, listening on 127.0.0.1:50051)');
  });

  it('takes over the lock of a process that has exited', async () => {
    const dir = dataDir();
    const other = await otherProcess();
    const started = startTime(other.pid);
    other.kill();
    await other.exited;
    writeOwner(dir, { pid: other.pid, started });
    expect(refusal(dir)).toBeUndefined();
  });

  it('takes over the lock of a process that has exited but is not reaped yet (a SIGKILLed orphan, until PID 1 reaps it)', async () => {
    const dir = dataDir();
    // `sleep 0`'s parent execs into `sleep 300`, which never waits for it: it stays a zombie.
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 300'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pid = Number(await new Promise<string>((resolve) => parent.stdout!.once('data', (d) => resolve(d.toString()))));
      const state = () => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1][0];
      await waitFor('the child to exit and stay unreaped', () => state() === 'Z');
      writeOwner(dir, { pid, started: startTime(pid) });
      expect(refusal(dir)).toBeUndefined();
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('takes over a lock whose pid now belongs to a process started at another time (a reused pid)', () => {
    const dir = dataDir();
    writeOwner(dir, { pid: process.pid, started: '1' });
    expect(refusal(dir)).toBeUndefined();
  });

  it('takes over a lock file that holds no whole record (no server writes one)', () => {
    const dir = dataDir();
    writeFileSync(join(dir, LOCK_FILE), '{"pid":');
    expect(refusal(dir)).toBeUndefined();
  });
});
