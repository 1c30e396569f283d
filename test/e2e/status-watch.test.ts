// `holdfast status --watch` in a real pseudo-terminal (util-linux `script`, which Debian always
// has): it redraws in place as locks come and go, and Ctrl-C (a real ^C through the terminal, so
// SIGINT from its line discipline) gives the screen back and exits 0.
import { spawn, type ChildProcess } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/redis/embedded';
import type { TestClient } from '../support/client';
import { useServers } from '../support/fixture';
import { uniqueName } from '../support/redis';
import { CLI, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

const REDRAW = '\x1b[H\x1b[J';
const LEAVE_SCREEN = '\x1b[?1049l';
const WAIT_MS = 15_000;

let server: ServerProcess;
let client: TestClient;
let http: string;

const env = useServers(1, async () => {
  http = `127.0.0.1:${await freePort()}`;
  return ['--http-listen', http];
});
beforeAll(() => void ([server, client] = [env.servers[0], env.clients[0]]));

interface Terminal {
  child: ChildProcess;
  output(): string;
  /** The last complete frame drawn. */
  lastFrame(): string;
  frames(): number;
  exited: Promise<number | null>;
}

/** Runs `holdfast ARGS` in a pseudo-terminal; ^C is written to it as a user would type it. */
function inTerminal(args: string[]): Terminal {
  // `exec`: script runs COMMAND through $SHELL -c, and a shell left waiting (dash, /bin/sh when
  // SHELL is unset) would take the ^C itself and exit 130 whatever holdfast does.
  const command = ['exec', process.execPath, CLI, ...args].join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, COLUMNS: '160', LINES: '40' } });
  let text = '';
  child.stdout!.on('data', (chunk) => (text += chunk.toString()));
  child.stderr!.on('data', (chunk) => (text += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const frames = () => text.split(REDRAW).slice(1);
  return {
    child,
    output: () => text,
    // The frame being drawn may be cut short: the one before it is whole.
    lastFrame: () => frames().at(-2) ?? '',
    frames: () => frames().length,
    exited,
  };
}

/** Seconds of lease left the frame shows for `name`'s holder (its LEASE LEFT column). */
function leaseLeft(frame: string, name: string): number {
  const line = frame.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(/ (\d+\.\d)s /.exec(line ?? '')?.[1] ?? NaN);
}

describe('status --watch', () => {
  it("follows the server's overview in place, and exits 0 on Ctrl-C with the screen given back", async () => {
    const prefix = uniqueName('watch');
    const name = `${prefix}/jobs`;
    const grant = await client.acquire({ name, owner: 'watch-owner', ttlMs: '30000' });
    const terminal = inTerminal(['status', '--watch', '--http', http, '--prefix', prefix]);
    await waitFor('the lock on screen', () => terminal.lastFrame().includes('watch-owner'), WAIT_MS);
    const first = leaseLeft(terminal.lastFrame(), name);
    expect(first).toBeGreaterThan(0);
    expect(terminal.lastFrame()).toContain('Redis reachable');
    // Redrawn: the lease left goes down frame by frame (Acquire is not renewed).
    await waitFor('a later frame with less lease left', () => leaseLeft(terminal.lastFrame(), name) < first, WAIT_MS);

    await client.release({ name, token: grant.token });
    await waitFor('the lock gone from the screen', () => terminal.lastFrame().includes('0 locks with holders or waiters'), WAIT_MS);
    expect(terminal.output()).not.toContain(grant.token);

    terminal.child.stdin!.write('\x03');
    expect(await terminal.exited).toBe(0);
    expect(terminal.output().trimEnd().endsWith(LEAVE_SCREEN)).toBe(true);
  });

  it('redraws named locks from Inspect, and exits 0 on Ctrl-C', async () => {
    const name = uniqueName('watch-named');
    const grant = await client.acquire({ name, owner: 'named-owner', ttlMs: '30000' });
    const terminal = inTerminal(['status', name, '--watch', '--interval-ms', '200', '--addr', server.addr]);
    await waitFor('the holder on screen', () => terminal.lastFrame().includes('named-owner'), WAIT_MS);
    await client.release({ name, token: grant.token });
    await waitFor('the lock shown free', () => / free /.test(terminal.lastFrame()), WAIT_MS);
    terminal.child.stdin!.write('\x03');
    expect(await terminal.exited).toBe(0);
    expect(terminal.output().trimEnd().endsWith(LEAVE_SCREEN)).toBe(true);
  });

  it('refuses to watch nothing: no lock name and no --http', async () => {
    const terminal = inTerminal(['status', '--watch', '--addr', server.addr]);
    expect(await terminal.exited).toBe(1);
    expect(terminal.output()).toContain('--watch --http');
  });
});
