// The server's logs, captured from a real server process at debug level: one line per lost lease
// and per Hold stream that broke; no token, API key (known or refused), key hash or Redis
// password on any line, whatever the calls; no "lost Redis" on an orderly stop; pino-pretty lines on a terminal.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HoldfastClient, secureChannel } from '../../clients/ts/index';
import { hashApiKey, newApiKey } from '../../src/auth/api-keys';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/redis/embedded';
import { vouchFor } from '../../src/redis/vouch';
import { connect } from '../support/client';
import { uniqueName } from '../support/redis';
import { CLI, startServerProcess, type ServerProcess } from '../support/server';
import { startTcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/wait';

const PASSWORD = `redis-pw-${randomBytes(8).toString('hex')}`;
const API_KEY = newApiKey();
const UNKNOWN_KEY = newApiKey();
let dir: string;
let redis: EmbeddedRedis;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'holdfast-logs-'));
  redis = await startEmbeddedRedis({ dataDir: join(dir, 'redis'), args: ['--save', '', '--requirepass', PASSWORD] });
  await vouchFor({ url: `redis://:${PASSWORD}@127.0.0.1:${redis.port}` });
});
afterAll(async () => {
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const parse = (lines: string[]) => lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);

describe('a server run from start to SIGTERM', () => {
  let server: ServerProcess;
  const secrets: string[] = [PASSWORD, API_KEY, hashApiKey(API_KEY), UNKNOWN_KEY];
  const names = { plain: uniqueName('plain'), capped: uniqueName('capped'), cut: uniqueName('cut') };

  beforeAll(async () => {
    const config = join(dir, 'holdfast.yaml');
    writeFileSync(config, `api-keys:\n  - { name: logs-test, sha256: ${hashApiKey(API_KEY)}, namespace: default, role: lock }\n`);
    server = await startServerProcess(`redis://127.0.0.1:${redis.port}`, ['--log-level', 'debug', '--config', config], { HOLDFAST_REDIS_PASSWORD: PASSWORD });
    const client = new HoldfastClient(server.addr, { apiKey: API_KEY });
    const raw = connect(server.addr, secureChannel({ apiKey: API_KEY }).options as object);
    try {
      // Refused: an unknown key, and no key at all.
      for (const apiKey of [UNKNOWN_KEY, undefined]) {
        const refused = new HoldfastClient(server.addr, { apiKey });
        await expect(refused.acquire(uniqueName())).rejects.toMatchObject({ code: status.UNAUTHENTICATED });
        refused.close();
      }
      // acquire, renew, release, a refused release, a Hold released, a Hold capped by max_hold_ms.
      const lock = await client.acquire(names.plain, { ttlMs: 5_000 });
      secrets.push(lock.token);
      await lock.renew(5_000);
      await expect(raw.release({ name: names.plain, token: `${lock.token}x` })).rejects.toMatchObject({ code: status.NOT_FOUND });
      await lock.release();
      const lease = await client.hold(names.plain, { ttlMs: 2_000 });
      secrets.push(lease.token);
      await lease.release();
      const capped = raw.hold({ name: names.capped, ttlMs: '5000', maxHoldMs: '300' });
      secrets.push((await capped.next((e) => !!e.acquired)).acquired!.token);
      await capped.ended;
      // A Hold whose connection is cut.
      const proxy = await startTcpProxy(server.addr);
      const cutClient = connect(proxy.addr, secureChannel({ apiKey: API_KEY }).options as object);
      const cut = cutClient.hold({ name: names.cut, ttlMs: '5000' });
      secrets.push((await cut.next((e) => !!e.acquired)).acquired!.token);
      proxy.cut();
      await cut.ended;
      await waitFor('the cut stream to be logged', () => server.logs.some((l) => l.includes('hold stream ended without a cancel')));
      cutClient.close();
      await proxy.close();
    } finally {
      client.close();
      raw.close();
    }
    expect(await server.stop('SIGTERM')).toBe(0);
  });

  it('logs one line per lost lease and per broken Hold stream, naming the lock and the reason', () => {
    const logs = parse(server.logs);
    expect(logs.filter((l) => l.msg === 'lease lost')).toEqual([
      expect.objectContaining({ level: 40, lock: names.capped, reason: 'max_hold', holdId: expect.any(String), detail: expect.any(String) }),
    ]);
    expect(logs.filter((l) => l.msg === 'hold stream ended without a cancel')).toEqual([
      expect.objectContaining({ level: 40, lock: names.cut, reason: 'stream_lost', holdId: expect.any(String) }),
    ]);
  });

  it('no line carries a token, an API key (accepted or refused), its hash or the Redis password', () => {
    expect(secrets).toHaveLength(4 + 4);
    expect(server.logs.length).toBeGreaterThan(5);
    // The check can see what the lines carry: the lock names are there.
    expect(server.logs.some((l) => l.includes(names.capped))).toBe(true);
    for (const secret of secrets) expect(server.logs.filter((l) => l.includes(secret))).toEqual([]);
  });
});

describe('an orderly stop with the embedded Redis', () => {
  // Stopping the redis-server child takes a while: long enough for the closed connection to be
  // reported before the process exits, as it always was before the stop said nothing of it.
  it('does not log "lost Redis"', async () => {
    const server = await startServerProcess(undefined, ['--data-dir', join(dir, 'embedded')]);
    expect(await server.stop('SIGTERM')).toBe(0);
    expect(server.logs.some((l) => l.includes('stopped embedded redis-server'))).toBe(true);
    expect(server.logs.filter((l) => /lost Redis/.test(l))).toEqual([]);
  });
});

describe('Redis lost while the server runs', () => {
  it('is logged once with the address and the cause, then again only when it is back (the negative control of the stop check)', async () => {
    const own = await startEmbeddedRedis({ dataDir: join(dir, 'own') });
    const server = await startServerProcess(own.url);
    const lost = () => server.logs.filter((l) => l.includes(`lost Redis at 127.0.0.1:${own.port}`));
    try {
      await own.stop();
      await waitFor('the lost connection to be logged', () => lost().length > 0);
      expect(JSON.parse(lost()[0]).cause).toMatch(/connection refused \(ECONNREFUSED\)|connection closed|reset/);
      const restarted = await startEmbeddedRedis({ dataDir: join(dir, 'own'), port: own.port });
      try {
        await waitFor('the recovery to be logged', () => server.logs.some((l) => l.includes(`Redis at 127.0.0.1:${own.port} is reachable again after`)));
        expect(lost()).toHaveLength(1); // once, not at every reconnect attempt
      } finally {
        await restarted.stop();
      }
    } finally {
      await server.stop();
    }
  });
});

describe('on a terminal', () => {
  it('logs pino-pretty lines instead of JSON', async () => {
    const pidFile = join(dir, 'tty-server.pid');
    const command = `echo $$ > ${pidFile}; exec ${process.execPath} ${CLI} serve --listen 127.0.0.1:0 --redis redis://:${PASSWORD}@127.0.0.1:${redis.port}`;
    // script(1) runs the command on a pseudo-terminal and copies what it prints to our pipe.
    const child = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    const exited = new Promise((resolve) => child.once('close', resolve));
    try {
      await waitFor('the server to listen', () => output.includes('holdfast listening'), 20_000);
      process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGTERM');
      await exited;
    } finally {
      child.kill('SIGKILL');
    }
    const line = output.split(/\r?\n/).find((l) => l.includes('holdfast listening'))!;
    expect(line).toMatch(/INFO/);
    expect(line).not.toMatch(/^\{/);
    expect(output).not.toMatch(/"level":/);
    expect(output).not.toContain(PASSWORD);
  });
});
