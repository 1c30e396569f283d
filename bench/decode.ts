// What checking request bytes before decoding costs (issue 18), in one run:
//  1. per message, in this process: ts-proto's decoder alone against the guarded deserializer
//     (byte walk + UTF-8 check + the same decoder), interleaved rounds;
//  2. end to end: sequential Acquire+Release pairs against a server built without the check
//     (--before=PATH/dist/src/cli.js, e.g. a `git archive` of the commit before it) and this
//     tree's server, one redis-server, alternating rounds; round-trip time and server CPU per pair.
// node bench/dist/bench/decode.js --before=/tmp/hf-before/dist/src/cli.js [--rounds=5] [--pairs=2000]
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { LockServiceService } from '../gen/holdfast/v1/lock';
import { guardRequests } from '../src/transport/decode';
import { checkMessageBytes, readRequestShapes } from '../src/transport/wire';
import { launchServer } from '../test/support/server';
import { CLI, ROOT, cpuSeconds, fixed, lockClient, machineNote, markdownTable, nowMs, quantile, setting, startBenchRedis } from './support';

const rounds = setting('rounds', 'HOLDFAST_BENCH_ROUNDS', 5);
const pairs = setting('pairs', 'HOLDFAST_BENCH_PAIRS', 2000);
const decodes = setting('decodes', 'HOLDFAST_BENCH_DECODES', 1_000_000);
const before = process.argv.find((a) => a.startsWith('--before='))?.slice('--before='.length);

function microbench(): string[][] {
  const shapes = readRequestShapes('holdfast/v1/lock.proto', [join(ROOT, 'proto')]);
  const guarded = guardRequests(LockServiceService, {}, { shapes, onRejected: () => {} }).service;
  const token = 'q3JzYWx0ZWQtdG9rZW4tMTIzNA';
  const messages = {
    acquire: LockServiceService.acquire.requestSerialize({
      name: 'orders/42',
      owner: 'worker-1',
      ttlMs: '30000',
      waitTimeoutMs: '5000',
      mode: 0,
      limit: 0,
      requestId: randomUUID(),
      value: '',
    }),
    release: LockServiceService.release.requestSerialize({ name: 'orders/42', token, holdId: '' }),
    hold: LockServiceService.hold.requestSerialize({
      name: 'orders/42',
      owner: 'worker-1',
      ttlMs: '30000',
      waitTimeoutMs: '5000',
      mode: 0,
      limit: 0,
      maxHoldMs: '0',
      releaseOnDisconnect: false,
      value: '',
    }),
  };
  const rows: string[][] = [];
  for (const [method, bytes] of Object.entries(messages) as [keyof typeof messages, Buffer][]) {
    const shape = shapes.get(LockServiceService[method].path)!;
    const variants: Record<string, (b: Buffer) => unknown> = {
      generated: LockServiceService[method].requestDeserialize,
      guarded: guarded[method].requestDeserialize,
      'check alone': (b) => checkMessageBytes(b, shape) ?? b,
    };
    const ns: Record<string, number[]> = {};
    for (let r = 0; r < rounds + 1; r++) {
      for (const [name, decode] of Object.entries(variants)) {
        // A loop of its own per variant: one shared call site would be polymorphic and time the JIT, not the decoders.
        const loop = new Function('decode', 'bytes', 'n', 'let sink = 0; for (let i = 0; i < n; i++) sink += decode(bytes) ? 1 : 0; return sink;');
        const start = process.hrtime.bigint();
        if (loop(decode, bytes, decodes) !== decodes) throw new Error(`${name} decoded nothing`);
        if (r > 0) (ns[name] ??= []).push(Number(process.hrtime.bigint() - start) / decodes); // round 0 warms up
      }
    }
    const [g, c, w] = [quantile(ns.generated, 0.5), quantile(ns.guarded, 0.5), quantile(ns['check alone'], 0.5)];
    rows.push([
      method,
      String(bytes.length),
      fixed(g, 0),
      fixed(c, 0),
      `${c >= g ? '+' : ''}${fixed(c - g, 0)} (${fixed(((c - g) / g) * 100, 0)}%)`,
      fixed(w, 0),
    ]);
  }
  return rows;
}

/** A server of the given build, with that bin's node flags, so both servers run as shipped. */
async function serve(cli: string, redisUrl: string) {
  const server = await launchServer({ cli, redisUrl, asShipped: true, keepLogs: false, onStderr: (chunk) => process.stderr.write(chunk) });
  return { addr: server.addr, pid: server.pid, stop: () => void server.stop() };
}

async function roundTrips(beforeCli: string): Promise<string[][]> {
  const redis = await startBenchRedis();
  const servers = { before: await serve(beforeCli, redis.url), after: await serve(CLI, redis.url) };
  const results: Record<string, { rtt: number[]; cpuUs: number[] }> = { before: { rtt: [], cpuUs: [] }, after: { rtt: [], cpuUs: [] } };
  try {
    for (let r = 0; r < rounds + 1; r++) {
      for (const [which, server] of Object.entries(servers)) {
        const client = lockClient(server.addr);
        await client.inspect({ name: 'warm-up' }); // connect outside the measurement
        const cpu = cpuSeconds(server.pid);
        const rtt: number[] = [];
        for (let i = 0; i < pairs; i++) {
          const name = `bench-decode-${i % 64}`;
          const start = nowMs();
          const grant = await client.acquire({ name, owner: 'worker-1', requestId: randomUUID() });
          await client.release({ name, token: grant.token });
          rtt.push(nowMs() - start);
        }
        client.close();
        if (r === 0) continue; // warm-up round
        results[which].rtt.push(...rtt);
        results[which].cpuUs.push(((cpuSeconds(server.pid) - cpu) / pairs) * 1e6);
      }
    }
  } finally {
    servers.before.stop();
    servers.after.stop();
    await redis.cleanup();
  }
  return Object.entries(results).map(([which, { rtt, cpuUs }]) => [
    which,
    String(rtt.length),
    fixed(quantile(rtt, 0.5) * 1000, 0),
    fixed(quantile(rtt, 0.99) * 1000, 0),
    fixed((rtt.reduce((a, b) => a + b, 0) / rtt.length) * 1000, 0),
    fixed(quantile(cpuUs, 0.5), 0),
    cpuUs.map((c) => fixed(c, 0)).join(' / '),
  ]);
}

async function main() {
  console.log(machineNote());
  console.log(`\nDecode per message, ${decodes} decodes per round, median of ${rounds} rounds (ns)\n`);
  console.log(markdownTable(['request', 'bytes', 'generated decoder', 'checked + decoder', 'added', 'the check alone'], microbench()));
  if (!before) {
    console.log('\n(--before=PATH/dist/src/cli.js not given: no round-trip comparison)');
    return;
  }
  console.log(`\nAcquire+Release pairs, sequential, one client, ${pairs} per round, ${rounds} rounds alternating (µs)\n`);
  console.log(markdownTable(['server', 'pairs', 'round trip p50', 'p99', 'mean', 'server CPU per pair (median round)', 'per round'], await roundTrips(before)));
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
