// `npm run bench:holder-failure`: how long a lock stays unavailable after its Hold holder is
// killed (SIGKILL), frozen (SIGSTOP) or cut off (a TCP proxy drops its connection), under the
// default rule (a holder that did not let go keeps its lock until its lease has run out) and under
// --release-on-disconnect (the old rule: free the lock the moment the stream ends). Both servers
// run in the same process tree on one Redis, started by this script; trials alternate between them.
//
// Each trial: a child process holds the lock through Hold, a waiter queues for it, the fault
// strikes right after a renewal (the worst case: a whole lease left), and the time from the fault
// to the waiter's grant is the unavailability.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { startTcpProxy, type TcpProxy } from '../test/support/tcp-proxy';
import {
  ROOT,
  fixed,
  lockClient,
  machineNote,
  markdownTable,
  quantile,
  setting,
  startBenchRedis,
  startHoldfast,
  writeResult,
  type HoldfastProcess,
  type LockClient,
} from './support';

const TTL_MS = setting('ttl-ms', 'HOLDFAST_BENCH_FAILURE_TTL_MS', 5000);
const TRIALS = setting('trials', 'HOLDFAST_BENCH_FAILURE_TRIALS', 3);
const KEEPALIVE_TIME_MS = setting('keepalive-time-ms', 'HOLDFAST_BENCH_KEEPALIVE_TIME_MS', 2000);
const KEEPALIVE_TIMEOUT_MS = setting('keepalive-timeout-ms', 'HOLDFAST_BENCH_KEEPALIVE_TIMEOUT_MS', 1000);
const HOLD_CHILD = join(ROOT, 'test', 'support', 'hold-child.js');

type Fault = 'killed' | 'frozen' | 'cut off';
const FAULTS: Fault[] = ['killed', 'frozen', 'cut off'];

/** A raw Hold in its own process; resolves once it printed `acquired` and then a `renewed` event. */
function startHolder(addr: string, name: string) {
  const child = spawn(process.execPath, [HOLD_CHILD, addr, name, String(TTL_MS)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const renewed = new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('"renewed"')) resolve();
    });
    void exited.then(() => reject(new Error(`holder exited early: ${out}`)));
  });
  return { child, exited, renewed };
}

async function trial(server: HoldfastProcess, waiter: LockClient, fault: Fault, index: number): Promise<number> {
  const name = `failure-${process.pid}-${fault.replace(' ', '-')}-${index}-${Date.now()}`;
  let proxy: TcpProxy | undefined;
  if (fault === 'cut off') proxy = await startTcpProxy(server.addr);
  const holder = startHolder(proxy?.addr ?? server.addr, name);
  try {
    await holder.renewed;
    const grant = waiter.acquire({ name, owner: 'waiter', waitTimeoutMs: String(TTL_MS * 10) }, TTL_MS * 10 + 5000);
    while ((await waiter.inspect({ name })).waiters < 1) await new Promise((r) => setTimeout(r, 5));
    const faultAt = performance.now();
    if (fault === 'killed') holder.child.kill('SIGKILL');
    else if (fault === 'frozen') holder.child.kill('SIGSTOP');
    else proxy!.cut();
    const granted = await grant;
    const unavailableMs = performance.now() - faultAt;
    if (!granted.acquired) throw new Error(`the waiter was not granted ${name}`);
    await waiter.release({ name, token: granted.token });
    return unavailableMs;
  } finally {
    holder.child.kill('SIGKILL');
    await holder.exited;
    await proxy?.close();
  }
}

async function main(): Promise<void> {
  const note = machineNote();
  const redis = await startBenchRedis();
  const keepalive = ['--keepalive-time-ms', String(KEEPALIVE_TIME_MS), '--keepalive-timeout-ms', String(KEEPALIVE_TIMEOUT_MS)];
  const rules = [
    { rule: 'default (lease runs out)', server: await startHoldfast(redis.url, keepalive) },
    { rule: '--release-on-disconnect', server: await startHoldfast(redis.url, [...keepalive, '--release-on-disconnect']) },
  ];
  const waiters = rules.map((r) => lockClient(r.server.addr));
  const samples = new Map<string, number[]>();
  try {
    for (let i = 0; i < TRIALS; i++) {
      for (const fault of FAULTS) {
        for (const [k, { rule, server }] of rules.entries()) {
          const ms = await trial(server, waiters[k], fault, i);
          const key = `${fault}|${rule}`;
          samples.set(key, [...(samples.get(key) ?? []), ms]);
          process.stderr.write(`${fault}, ${rule}: ${fixed(ms, 0)} ms\n`);
        }
      }
    }
  } finally {
    waiters.forEach((w) => w.close());
    await Promise.all(rules.map((r) => r.server.stop()));
    await redis.cleanup();
  }
  const rows = FAULTS.flatMap((fault) =>
    rules.map(({ rule }) => {
      const ms = samples.get(`${fault}|${rule}`)!;
      return [fault, rule, fixed(quantile(ms, 0.5), 0), fixed(Math.min(...ms), 0), fixed(Math.max(...ms), 0)];
    }),
  );
  const text = [
    `# Lock unavailable after its holder fails (npm run bench:holder-failure)`,
    '',
    `ttl ${TTL_MS} ms, server keepalive ${KEEPALIVE_TIME_MS} ms + ${KEEPALIVE_TIMEOUT_MS} ms, ${TRIALS} trials each; the fault strikes right after a renewal. ${note}.`,
    '',
    markdownTable(['holder', 'rule', 'unavailable p50 (ms)', 'min', 'max'], rows),
    '',
  ].join('\n');
  process.stdout.write(text);
  process.stderr.write(`written to ${writeResult('holder-failure.md', text)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
