// `npm run bench:fencing`: what the fencing guard adds to an HTTP request, per store, against the
// same server without the guard, and what verifying a signed fence adds (the memory store's guard
// with and without a key ring), in one run. The server is a child process; its stores are real:
// a durable redis-server (appendonly yes, appendfsync always, as the Redis store requires) and a
// private PostgreSQL (fsync on, each check a committed statement). The holder writes again and
// again with one token (the common case). Rounds interleave the routes (each starting at another), so load drifts hit all alike.
// Then, in this process, the cost of one signature and one verification (Node's crypto, Ed25519).
import { execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { attachFenceHeaders, fenceKeyId, parseFenceKeys, signFence } from '../clients/ts/fencing';
import { startEmbeddedRedis } from '../src/redis/embedded';
import { cpuSeconds, fixed, machineNote, markdownTable, quantile, ROOT, setting, stopChild, writeResult } from './support';

const REQUESTS = setting('requests', 'HOLDFAST_BENCH_REQUESTS', 4000);
const CONCURRENCY = setting('concurrency', 'HOLDFAST_BENCH_CONCURRENCY', 8);
const ROUNDS = setting('rounds', 'HOLDFAST_BENCH_ROUNDS', 4);
const ROUTES = ['/plain', '/memory', '/memory-signed', '/redis', '/postgres'];
const SIGNATURES = setting('signatures', 'HOLDFAST_BENCH_SIGNATURES', 20_000);
const POSTGRES_SH = join(ROOT, 'test', 'support', 'postgres.sh');

/** The bench's own signing key (made for this run) and its JWK set. */
function benchKey(): { privateKey: KeyObject; jwks: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const x = publicKey.export({ format: 'jwk' }).x!;
  const kid = fenceKeyId(Buffer.from(x, 'base64url'));
  return { privateKey, jwks: JSON.stringify({ keys: [{ kty: 'OKP', crv: 'Ed25519', kid, x, alg: 'EdDSA', use: 'sig' }] }) };
}

/**
 * `REQUESTS` PUTs to `route`/`lock`, `CONCURRENCY` at a time on kept-alive connections: µs per
 * request (wall time / requests) and latencies. The signed route gets a signed fence too, as a
 * holder with a signing server sends it.
 */
async function drive(port: number, route: string, lock: string, key: KeyObject): Promise<{ usPerRequest: number; latenciesUs: number[] }> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const signedFence = route.endsWith('-signed') ? signFence(key, { lock, token: 42n, leaseEndMs: Date.now() + 3_600_000 }) : undefined;
  const headers = attachFenceHeaders({ 'content-length': '1' }, lock, 42n, signedFence);
  const path = `${route}/${encodeURIComponent(lock)}`;
  const latenciesUs: number[] = [];
  let sent = 0;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const started = process.hrtime.bigint();
      const req = request({ host: '127.0.0.1', port, path, method: 'PUT', agent, headers }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`${path}: HTTP ${res.statusCode}`));
        res.resume().on('end', () => {
          latenciesUs.push(Number(process.hrtime.bigint() - started) / 1000);
          resolve();
        });
      });
      req.on('error', reject);
      req.end('x');
    });
  const worker = async () => {
    while (sent++ < REQUESTS) await one();
  };
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const usPerRequest = Number(process.hrtime.bigint() - start) / 1000 / REQUESTS;
  agent.destroy();
  return { usPerRequest, latenciesUs };
}

/** CPU µs (this process's user + system) per call of `work`, median of 5 rounds of SIGNATURES calls: CPU time, which a shared machine's load inflates far less than wall time. */
function perCall(work: (i: number) => unknown): number {
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const start = process.cpuUsage();
    for (let i = 0; i < SIGNATURES; i++) work(i);
    const used = process.cpuUsage(start);
    rounds.push((used.user + used.system) / SIGNATURES);
  }
  return quantile(rounds, 0.5);
}

/** Signing (what the server adds per grant) and verifying (what a guard adds per request), one fence at a time. */
function signatureCosts(key: KeyObject, jwks: string): string[][] {
  const ring = parseFenceKeys(jwks);
  const leaseEndMs = Date.now() + 3_600_000;
  const fences = Array.from({ length: 64 }, (_, i) => signFence(key, { lock: `orders-${i}`, token: BigInt(i + 1), leaseEndMs }));
  perCall((i) => ring.verify(fences[i % 64])); // warm-up
  const sign = perCall((i) => signFence(key, { lock: `orders-${i % 64}`, token: BigInt(i + 1), leaseEndMs }));
  const verify = perCall((i) => ring.verify(fences[i % 64]));
  return [
    ['sign one fence (server, per grant or renewal)', fixed(sign, 1), fixed(1e6 / sign, 0)],
    ['parse + verify one fence (guard, per request)', fixed(verify, 1), fixed(1e6 / verify, 0)],
  ];
}

async function main(): Promise<void> {
  const note = machineNote();
  const key = benchKey();
  const redisDir = mkdtempSync(join(tmpdir(), 'holdfast-bench-fence-redis-'));
  const pgDir = join(mkdtempSync(join(tmpdir(), 'holdfast-bench-fence-pg-')), 'pg');
  const redis = await startEmbeddedRedis({ dataDir: redisDir, args: ['--appendonly', 'yes', '--appendfsync', 'always', '--save', ''] });
  const pgUrl = /PGURL=(\S+)/.exec(execFileSync('bash', [POSTGRES_SH, 'start', pgDir], { encoding: 'utf8' }))![1];
  const server = spawn(process.execPath, [join(__dirname, 'fencing-server.js'), redis.url, pgUrl, key.jwks], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      server.stdout!.on('data', (chunk: Buffer) => {
        const m = /listening (\d+)/.exec(chunk.toString());
        if (m) resolve(Number(m[1]));
      });
      void exited.then(() => reject(new Error('the bench server exited before listening')));
    });
    const per = new Map<string, { us: number[]; lat: number[]; cpu: number[] }>(ROUTES.map((r) => [r, { us: [], lat: [], cpu: [] }]));
    for (const route of ROUTES) await drive(port, route, `warm-up${route}`, key.privateKey); // JIT, connections, the PostgreSQL table
    for (let round = 0; round < ROUNDS; round++) {
      // Each round starts at another route, so no route is always the one after the warm-up.
      for (const route of [...ROUTES.slice(round % ROUTES.length), ...ROUTES.slice(0, round % ROUTES.length)]) {
        const cpuBefore = cpuSeconds(server.pid!);
        const { usPerRequest, latenciesUs } = await drive(port, route, `bench-${round}${route}`, key.privateKey);
        per.get(route)!.cpu.push(((cpuSeconds(server.pid!) - cpuBefore) * 1e6) / REQUESTS);
        per.get(route)!.us.push(usPerRequest);
        per.get(route)!.lat.push(...latenciesUs);
      }
    }
    const plain = quantile(per.get('/plain')!.us, 0.5);
    const plainCpu = quantile(per.get('/plain')!.cpu, 0.5);
    const unsignedCpu = quantile(per.get('/memory')!.cpu, 0.5);
    const signedCpu = quantile(per.get('/memory-signed')!.cpu, 0.5);
    const plainP50 = quantile(per.get('/plain')!.lat, 0.5);
    const rows = ROUTES.map((route) => {
      const { us, lat, cpu } = per.get(route)!;
      const cpuUs = quantile(cpu, 0.5);
      const median = quantile(us, 0.5);
      const p50 = quantile(lat, 0.5);
      return [
        route === '/plain' ? 'no guard' : route === '/memory-signed' ? 'guard with keys (signed fence), memory store' : `guard, ${route.slice(1)} store`,
        fixed(median, 1),
        route === '/plain' ? '-' : fixed(median - plain, 1),
        fixed(median / plain, 2),
        fixed(p50, 0),
        route === '/plain' ? '-' : fixed(p50 / plainP50, 2),
        fixed(quantile(lat, 0.99), 0),
        fixed(cpuUs, 1),
        route === '/plain' ? '-' : fixed(cpuUs - plainCpu, 1),
      ];
    });
    const text = [
      '# The fencing guard per HTTP request (`npm run bench:fencing`)',
      '',
      note,
      '',
      `${REQUESTS} PUTs per route and round, ${CONCURRENCY} at a time on kept-alive connections, ${ROUNDS} rounds interleaved, each starting at another route; one token per lock (a holder writing again). ` +
        "µs per request = wall time / requests (median of the rounds); latency over all rounds; server CPU = the server process's user + system time / requests (median of the rounds: the figure a shared machine's load inflates least). Redis: appendonly yes, appendfsync always; PostgreSQL: fsync on, each check its own commit.",
      '',
      markdownTable(
        ['route', 'µs per request', 'added µs', 'ratio', 'p50 latency (µs)', 'p50 ratio', 'p99 latency (µs)', 'server CPU µs per request', 'added CPU µs'],
        rows,
      ),
      '',
      `Verifying the signed fence (the guard with keys against the guard without, both on the memory store): ${fixed(signedCpu - unsignedCpu, 1)} µs of server CPU per request.`,
      '',
      `Signed fences, in this process (Node's crypto, Ed25519; CPU time, ${SIGNATURES} calls per round, median of 5 rounds):`,
      '',
      markdownTable(['operation', 'CPU µs each', 'per second (one core)'], signatureCosts(key.privateKey, key.jwks)),
    ].join('\n');
    console.log(text);
    console.log(`written to ${writeResult('fencing.md', text)}`);
  } finally {
    await stopChild(server, exited, 5000);
    execFileSync('bash', [POSTGRES_SH, 'stop', pgDir], { stdio: 'ignore' });
    rmSync(join(pgDir, '..'), { recursive: true, force: true });
    await redis.stop();
    rmSync(redisDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
