// OpenTelemetry traces (README "Traces"). In process: the real server (startServer) with a tracer
// provider whose in-memory exporter the test reads, real gRPC clients, a real redis-server. As a
// child process: the OTLP/HTTP export to a receiver the test runs, and no SDK loaded without it.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { credentials, Metadata } from '@grpc/grpc-js';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockServiceClient } from '../../gen/holdfast/v1/lock';
import { freePort } from '../../src/redis/embedded';
import { startServer, type RunningServer } from '../../src/server';
import { connect, acquireRequest, type TestClient } from '../support/client';
import { openSession } from '../support/session';
import { startTestRedis, uniqueName, type TestRedis } from '../support/redis';
import { startServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
let redis: TestRedis;
let server: RunningServer;
let client: TestClient;
let peer: TestClient;
let dataDir: string;

beforeAll(async () => {
  redis = await startTestRedis();
  dataDir = mkdtempSync(join(tmpdir(), 'holdfast-traces-'));
  server = await startServer({
    listen: '127.0.0.1:0',
    redisUrl: redis.url,
    dataDir,
    defaultTtlMs: 30_000,
    maxHoldMs: 0,
    lockDelayMs: 0,
    keepaliveTimeMs: 10_000,
    keepaliveTimeoutMs: 5_000,
    deadlineMarginMs: 50,
    keyPrefix: 'hf',
    tracerProvider: provider,
    logger: pino({ level: 'silent' }),
  });
  client = connect(`127.0.0.1:${server.port}`);
  peer = connect(`127.0.0.1:${server.port}`, { 'grpc.use_local_subchannel_pool': 1 });
});
afterAll(async () => {
  client?.close();
  peer?.close();
  await server?.stop();
  await redis?.cleanup();
  rmSync(dataDir, { recursive: true, force: true });
});

const spansOf = (lock: string) => {
  const all = exporter.getFinishedSpans();
  const calls = all.filter((s) => s.attributes['holdfast.lock'] === lock);
  const traceIds = new Set(calls.map((s) => s.spanContext().traceId));
  return all.filter((s) => traceIds.has(s.spanContext().traceId));
};
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan) => span.spanContext().spanId;

describe('traces', () => {
  it('an Acquire that waits: a SERVER span, its acquire script, and a wait span as its child', async () => {
    const name = uniqueName();
    const first = await client.acquire({ name, ttlMs: '10000' });
    const waiting = peer.acquire({ name, ttlMs: '10000', waitTimeoutMs: '10000' });
    await waitFor('a waiter', async () => (await client.inspect({ name })).waiters === 1);
    await client.release({ name, token: first.token });
    expect((await waiting).acquired).toBe(true);
    await waitFor('the waiting Acquire span', () => spansOf(name).filter((s) => s.name === 'holdfast.v1.LockService/Acquire').length === 2);

    const acquires = spansOf(name).filter((s) => s.name === 'holdfast.v1.LockService/Acquire');
    const waited = acquires.find((a) => spansOf(name).some((s) => s.name === 'holdfast.wait' && parentOf(s) === idOf(a)))!;
    expect(waited).toBeDefined();
    expect(waited.kind).toBe(SpanKind.SERVER);
    expect(waited.attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.method': 'Acquire', 'rpc.grpc.status_code': 0 });
    const wait = spansOf(name).find((s) => s.name === 'holdfast.wait' && parentOf(s) === idOf(waited))!;
    expect(wait.attributes['holdfast.wait.outcome']).toBe('granted');
    const script = spansOf(name).find((s) => s.name === 'redis acquire' && parentOf(s) === idOf(waited))!;
    expect(script.kind).toBe(SpanKind.CLIENT);
    expect(script.attributes['holdfast.script']).toBe('acquire');
    // The wait lies within its Acquire.
    expect(wait.startTime[0] * 1e9 + wait.startTime[1]).toBeGreaterThanOrEqual(waited.startTime[0] * 1e9 + waited.startTime[1]);
    // The Release has its own span with its script inside.
    const release = spansOf(name).find((s) => s.name === 'holdfast.v1.LockService/Release')!;
    expect(spansOf(name).some((s) => s.name === 'redis release' && parentOf(s) === idOf(release))).toBe(true);
  });

  it('a Session: each operation a span of its own under the session, with its scripts and wait inside', async () => {
    const name = uniqueName();
    const first = await client.acquire({ name, ttlMs: '10000' });
    const s = openSession(peer.client);
    const waiting = s.send({ opId: '1', acquire: { name, ttlMs: '10000', waitTimeoutMs: '10000' } });
    await waitFor('a waiter', async () => (await client.inspect({ name })).waiters === 1);
    await client.release({ name, token: first.token });
    const token = (await s.answerTo(waiting)).acquire!.token;
    expect((await s.op({ release: { name, token: 'not-a-token' } })).error?.code).toBe(5);
    expect((await s.op({ release: { name, token } })).release?.released).toBe(true);
    s.call.end();
    await s.ended;
    await waitFor('the session span', () => spansOf(name).some((sp) => sp.name === 'holdfast.v1.LockService/Session'));
    const session = spansOf(name).find((sp) => sp.name === 'holdfast.v1.LockService/Session')!;
    const ops = spansOf(name).filter((sp) => parentOf(sp) === idOf(session));
    expect(ops.map((sp) => [sp.name, sp.attributes['rpc.grpc.status_code']])).toEqual([
      ['holdfast.v1.LockService/Session/Acquire', 0],
      ['holdfast.v1.LockService/Session/Release', 5],
      ['holdfast.v1.LockService/Session/Release', 0],
    ]);
    const acquire = ops[0];
    expect(spansOf(name).some((sp) => sp.name === 'holdfast.wait' && parentOf(sp) === idOf(acquire))).toBe(true);
    expect(spansOf(name).some((sp) => sp.name === 'redis acquire' && parentOf(sp) === idOf(acquire))).toBe(true);
    expect(spansOf(name).some((sp) => sp.name === 'redis release' && parentOf(sp) === idOf(ops[2]))).toBe(true);
  });

  it('a Hold: a SERVER span that ends with the stream, with its acquire script inside', async () => {
    const name = uniqueName();
    const stream = client.hold({ name, ttlMs: '300' });
    await stream.next((e) => !!e.acquired);
    await stream.next(() => stream.events.filter((e) => e.renewed).length >= 2);
    expect(spansOf(name).some((s) => s.name === 'holdfast.v1.LockService/Hold')).toBe(false); // still open
    stream.call.cancel();
    await waitFor('the Hold span', () => spansOf(name).some((s) => s.name === 'holdfast.v1.LockService/Hold'));
    const hold = spansOf(name).find((s) => s.name === 'holdfast.v1.LockService/Hold')!;
    expect(hold.attributes['rpc.grpc.status_code']).toBe(1); // CANCELLED
    expect(spansOf(name).some((s) => s.name === 'redis acquire' && parentOf(s) === idOf(hold))).toBe(true);
    // Renewals serve every Hold at once: their batches are traces of their own.
    expect(exporter.getFinishedSpans().some((s) => s.name === 'redis renewBatch' && parentOf(s) === undefined)).toBe(true);
  });

  it("a caller's traceparent becomes the parent of the call's span", async () => {
    const name = uniqueName();
    const raw = new LockServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    const metadata = new Metadata();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    metadata.set('traceparent', `00-${traceId}-00f067aa0ba902b7-01`);
    await new Promise((resolve, reject) => raw.acquire(acquireRequest({ name }), metadata, (err, res) => (err ? reject(err) : resolve(res))));
    raw.close();
    const span = exporter.getFinishedSpans().find((s) => s.attributes['holdfast.lock'] === name)!;
    expect(span.spanContext().traceId).toBe(traceId);
    expect(parentOf(span)).toBe('00f067aa0ba902b7');
  });
});

describe('traces from a server process', () => {
  let receiver: Server;
  let receiverPort: number;
  const bodies: string[] = [];
  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        if (req.url === '/v1/traces') bodies.push(body);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    receiverPort = await freePort();
    await new Promise<void>((resolve) => receiver.listen(receiverPort, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

  it('exports spans over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set', async () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiverPort}`, OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_SERVICE_NAME: 'holdfast-test' };
    const child = await startServerProcess(redis.url, [], env);
    const c = connect(child.addr);
    try {
      const name = uniqueName('exported');
      const grant = await c.acquire({ name });
      await c.release({ name, token: grant.token });
      await waitFor('the exported spans', () => bodies.some((b) => b.includes(name)), 15_000);
      const body = bodies.find((b) => b.includes(name))!;
      expect(body).toContain('holdfast.v1.LockService/Acquire');
      expect(body).toContain('holdfast-test');
      expect(child.logs.some((l) => l.includes('exporting traces over OTLP'))).toBe(true);
    } finally {
      c.close();
      await child.stop();
    }
  });

  it('loads no OpenTelemetry SDK when OTEL_EXPORTER_OTLP_ENDPOINT is not set', async () => {
    const script = `
      const { startTracing } = require(${JSON.stringify(join(__dirname, '..', '..', 'dist', 'src', 'observability', 'tracing.js'))});
      require(${JSON.stringify(join(__dirname, '..', '..', 'dist', 'src', 'server.js'))});
      const sdk = () => Object.keys(require.cache).filter((k) => /@opentelemetry[\\\\/](sdk-trace|exporter|resources|context-async-hooks)/.test(k)).length;
      const off = [startTracing() === undefined, sdk()];
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = 'http://127.0.0.1:9';
      const on = startTracing();
      console.log(JSON.stringify({ off, on: [on !== undefined, sdk() > 0] }));
      on.shutdown();
    `;
    const env = { ...process.env };
    delete env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['-e', script], { env, stdio: ['ignore', 'pipe', 'inherit'] });
      let text = '';
      child.stdout.on('data', (chunk) => (text += chunk));
      child.once('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`exit ${code}`))));
    });
    // Off: nothing loaded. On (the negative control): the same check finds the SDK.
    expect(JSON.parse(out)).toEqual({ off: [true, 0], on: [true, true] });
  });
});
