// The one launcher for scripts that are not TypeScript (clients/test-clients.sh): a private
// redis-server (recorded as new to holdfast) and one holdfast server per argument, each
// argument a JSON array of that server's extra `serve` flags, all started the way the tests
// start them. Prints what it started, one "key value" line each, then "ready"; stops them all
// by PID on SIGTERM, SIGINT or when its stdin closes. Each server's log goes to
// <logs>/server-<i>.log (--logs DIR, default: the OS temp dir). A server given --http-listen
// (127.0.0.1:0 for a free port) has its HTTP port printed too, as server-<i>-http.
//   node test/support/dist/test/support/launch-cli.js [--logs DIR] '[]' '["--tls-cert","c.pem"]'
// prints: redis redis://127.0.0.1:PORT / redis-pid PID / server-0 127.0.0.1:PORT / server-0-pid PID / [server-0-http PORT] / ... / ready
import { createWriteStream, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestRedis } from './redis';
import { launchServer, type ServerProcess } from './server';

function parse(argv: string[]): { logs: string; servers: string[][] } {
  let logs = '';
  const servers: string[][] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--logs') {
      logs = argv[++i] ?? '';
      if (!logs) throw new Error('--logs: expected a directory');
      continue;
    }
    let flags: unknown;
    try {
      flags = JSON.parse(argv[i]);
    } catch {
      flags = undefined;
    }
    if (!Array.isArray(flags) || !flags.every((f) => typeof f === 'string'))
      throw new Error(`server ${servers.length}: expected a JSON array of strings, got ${argv[i]}`);
    servers.push(flags);
  }
  return { logs: logs || mkdtempSync(join(tmpdir(), 'holdfast-launch-')), servers };
}

/** The HTTP listener's port, from the line the server logs when it serves it (before it listens on gRPC). */
function httpPortIn(line: string): number | undefined {
  try {
    const entry = JSON.parse(line) as { httpListen?: string; port?: number };
    return entry.httpListen ? entry.port : undefined;
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const { logs, servers: serverFlags } = parse(process.argv.slice(2));
  const redis = await startTestRedis();
  const servers: ServerProcess[] = [];
  let stopping: Promise<void> | undefined;
  const stop = (code = 0) =>
    (stopping ??= (async () => {
      await Promise.all(servers.map((s) => s.stop('SIGTERM', 10_000)));
      await redis.cleanup();
    })().then(() => process.exit(code)));
  process.on('SIGTERM', () => stop());
  process.on('SIGINT', () => stop());
  const say = (key: string, value: string | number) => process.stdout.write(`${key} ${value}\n`);
  say('redis', redis.url);
  say('redis-pid', redis.pid);
  try {
    for (const [i, args] of serverFlags.entries()) {
      const log = createWriteStream(join(logs, `server-${i}.log`));
      let httpPort: number | undefined;
      servers.push(
        await launchServer({
          redisUrl: redis.url,
          args,
          keepLogs: false,
          timeoutMs: 60_000,
          onLine: (line) => {
            log.write(`${line}\n`);
            httpPort ??= httpPortIn(line);
          },
          onStderr: (chunk) => log.write(chunk),
        }),
      );
      say(`server-${i}`, servers[i].addr);
      say(`server-${i}-pid`, servers[i].pid);
      if (httpPort !== undefined) say(`server-${i}-http`, httpPort);
    }
  } catch (err) {
    process.stderr.write(`launch: ${(err as Error).message}\n`);
    await stop(1);
  }
  say('ready', logs);
  // Read only now: a closed stdin (the caller gone) stops what was started, once it all runs.
  process.stdin.on('end', () => stop()).resume();
}

main().catch((err: unknown) => {
  process.stderr.write(`launch: ${(err as Error)?.message ?? err}\n`);
  process.exit(1);
});
