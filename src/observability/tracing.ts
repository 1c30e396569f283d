// OpenTelemetry traces: a SERVER span per LockService call (its parent taken from the caller's
// `traceparent` metadata), a `holdfast.wait` child span while an Acquire or Hold is queued, and a
// CLIENT span per Lua script call. Exported over OTLP/HTTP only when OTEL_EXPORTER_OTLP_ENDPOINT
// (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; otherwise no SDK is loaded and the server
// builds no span at all (no interceptor, no observer).
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Context,
  type Span,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { type Metadata, ServerInterceptingCall, status, type ServerInterceptingCallInterface, type ServerInterceptor } from '@grpc/grpc-js';
import type { AcquireOutcome, EngineObserver, Probe, ScriptRun } from '../engine/observer';
import { NO_OBSERVER } from '../engine/observer';

export interface Tracing {
  /** The engine's observer for wait and script spans. */
  observer: EngineObserver;
  /** Starts the SERVER span of each LockService call and runs its handler inside it. */
  interceptor: ServerInterceptor;
  /** A span for one operation of a Session, a child of the session's span, named as its unary twin with Session/ before it. */
  sessionOp: SessionOpTracer;
  /** Sends what is still buffered (orderly stop). */
  shutdown(): Promise<void>;
}

const LOCK_SERVICE = '/holdfast.v1.LockService/';

/** Whether the environment asks for OTLP export. */
export function otlpConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return !!(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) && env.OTEL_SDK_DISABLED !== 'true';
}

/**
 * Tracing with `provider` (tests pass one with an in-memory exporter), or with an OTLP/HTTP
 * exporter when the environment asks for one; undefined when neither.
 */
export function startTracing(provider?: TracerProvider & { shutdown?(): Promise<void> }): Tracing | undefined {
  if (!provider && !otlpConfigured()) return undefined;
  provider ??= otlpProvider();
  installContext();
  const tracer = provider.getTracer('holdfast');
  return {
    observer: new TracingObserver(tracer),
    interceptor: rpcSpans(tracer),
    sessionOp: sessionOpSpans(tracer),
    shutdown: async () => {
      await provider.shutdown?.();
    },
  };
}

/** The SDK, loaded only here: a server without OTLP settings never requires it. */
function otlpProvider(): TracerProvider & { shutdown(): Promise<void> } {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const sdk = require('@opentelemetry/sdk-trace') as typeof import('@opentelemetry/sdk-trace');
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const resources = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { ATTR_SERVICE_NAME } = require('@opentelemetry/semantic-conventions') as typeof import('@opentelemetry/semantic-conventions');
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector) win over the default name.
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'holdfast' }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  // The exporter reads its endpoint, headers and timeout from the OTEL_EXPORTER_OTLP_* variables.
  return new sdk.TracerProvider({
    resource,
    sampler: samplerFromEnv(sdk),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
  });
}

/**
 * OTEL_TRACES_SAMPLER (always_on, always_off, traceidratio, and their parentbased_ forms; default
 * parentbased_always_on) with OTEL_TRACES_SAMPLER_ARG as the ratio: this SDK does not read them itself.
 */
function samplerFromEnv(sdk: typeof import('@opentelemetry/sdk-trace'), env: NodeJS.ProcessEnv = process.env) {
  const name = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').trim().toLowerCase();
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG ?? '1');
  const root = name.endsWith('always_off')
    ? new sdk.AlwaysOffSampler()
    : name.endsWith('traceidratio')
      ? new sdk.TraceIdRatioBasedSampler(Number.isFinite(ratio) ? ratio : 1)
      : new sdk.AlwaysOnSampler();
  return name.startsWith('parentbased_') ? new sdk.ParentBasedSampler({ root }) : root;
}

/** Spans follow async calls through AsyncLocalStorage, and parents come in as W3C traceparent. */
function installContext(): void {
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks') as typeof import('@opentelemetry/context-async-hooks');
  const { W3CTraceContextPropagator } = require('@opentelemetry/core') as typeof import('@opentelemetry/core');
  // Both calls keep what is already installed (an application embedding the server may have its own).
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
}

const metadataGetter = {
  get: (carrier: Metadata, key: string) => carrier.get(key).map(String),
  keys: (carrier: Metadata) => Object.keys(carrier.getMap()),
};

function rpcSpans(tracer: Tracer): ServerInterceptor {
  return (method, call: ServerInterceptingCallInterface) => {
    if (!method.path.startsWith(LOCK_SERVICE)) return new ServerInterceptingCall(call);
    const rpcMethod = method.path.slice(LOCK_SERVICE.length);
    let span: Span | undefined;
    let spanContext: Context = ROOT_CONTEXT;
    const end = (code: number, details?: string) => {
      if (!span) return;
      span.setAttribute('rpc.grpc.status_code', code);
      if (code !== status.OK) span.setStatus({ code: SpanStatusCode.ERROR, message: details });
      span.end();
      span = undefined;
    };
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, nextMetadata) => {
            const parent = propagation.extract(ROOT_CONTEXT, metadata, metadataGetter);
            span = tracer.startSpan(
              `holdfast.v1.LockService/${rpcMethod}`,
              { kind: SpanKind.SERVER, attributes: { 'rpc.system': 'grpc', 'rpc.service': 'holdfast.v1.LockService', 'rpc.method': rpcMethod } },
              parent,
            );
            spanContext = trace.setSpan(parent, span);
            nextMetadata(metadata);
          },
          onReceiveMessage: (message, nextMessage) => {
            const name = (message as { name?: unknown })?.name;
            if (span && typeof name === 'string') span.setAttribute('holdfast.lock', name);
            context.with(spanContext, () => nextMessage(message));
          },
          // The handler starts here: everything it awaits runs inside the call's span.
          onReceiveHalfClose: (nextHalfClose) => context.with(spanContext, nextHalfClose),
          onCancel: () => end(status.CANCELLED, 'the client went away'),
        }),
      sendStatus: (statusObject, next) => {
        end(statusObject.code, statusObject.details);
        next(statusObject);
      },
    });
  };
}

/** Runs `run` inside a new span for one session operation; `end` closes the span with the operation's status. */
export type SessionOpTracer = <T>(method: string, lock: string, run: () => T) => { result: T; end(code: number, details: string): void };

function sessionOpSpans(tracer: Tracer): SessionOpTracer {
  return (method, lock, run) => {
    const parent = context.active();
    const span = tracer.startSpan(
      `holdfast.v1.LockService/Session/${method}`,
      { kind: SpanKind.INTERNAL, attributes: { 'rpc.system': 'grpc', 'rpc.service': 'holdfast.v1.LockService', 'rpc.method': method, 'holdfast.lock': lock } },
      parent,
    );
    const result = context.with(trace.setSpan(parent, span), run);
    let open = true;
    return {
      result,
      end: (code, details) => {
        if (!open) return;
        open = false;
        span.setAttribute('rpc.grpc.status_code', code);
        if (code !== status.OK) span.setStatus({ code: SpanStatusCode.ERROR, message: details });
        span.end();
      },
    };
  };
}

/**
 * Wait and script spans. The claim and renewal-batch scripts serve many callers at once (a wake-up,
 * a watchdog tick): they start traces of their own rather than join whichever call armed their timer.
 */
class TracingObserver implements EngineObserver {
  constructor(private readonly tracer: Tracer) {}

  scriptStart(script: ScriptRun): Probe {
    const parent = script === 'claim' || script === 'renewBatch' ? ROOT_CONTEXT : context.active();
    return this.tracer.startSpan(
      `redis ${script}`,
      { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'redis', 'db.operation.name': 'FCALL', 'holdfast.script': script } },
      parent,
    );
  }

  scriptEnd(probe: Probe, _script: ScriptRun, failed: boolean): void {
    const span = probe as Span;
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }

  acquireStart = NO_OBSERVER.acquireStart;
  acquireEnd = NO_OBSERVER.acquireEnd;

  waitStart(): Probe {
    return this.tracer.startSpan('holdfast.wait', { kind: SpanKind.INTERNAL }, context.active());
  }

  waitEnd(probe: Probe, outcome: AcquireOutcome): void {
    const span = probe as Span;
    span.setAttribute('holdfast.wait.outcome', outcome);
    if (outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }

  handoff = NO_OBSERVER.handoff;
  released = NO_OBSERVER.released;
  tokenGone = NO_OBSERVER.tokenGone;
  leaseLost = NO_OBSERVER.leaseLost;
  deadlock = NO_OBSERVER.deadlock;
}

/** One observer that tells both (metrics and traces); a probe is the pair of theirs. */
export function bothObservers(a: EngineObserver, b: EngineObserver): EngineObserver {
  return {
    scriptStart: (script) => [a.scriptStart(script), b.scriptStart(script)],
    scriptEnd: (probe, script, failed) => {
      const [pa, pb] = probe as [Probe, Probe];
      a.scriptEnd(pa, script, failed);
      b.scriptEnd(pb, script, failed);
    },
    acquireStart: () => [a.acquireStart(), b.acquireStart()],
    acquireEnd: (probe, outcome) => {
      const [pa, pb] = probe as [Probe, Probe];
      a.acquireEnd(pa, outcome);
      b.acquireEnd(pb, outcome);
    },
    waitStart: () => [a.waitStart(), b.waitStart()],
    waitEnd: (probe, outcome) => {
      const [pa, pb] = probe as [Probe, Probe];
      a.waitEnd(pa, outcome);
      b.waitEnd(pb, outcome);
    },
    handoff: (ms) => (a.handoff(ms), b.handoff(ms)),
    released: (vanished) => (a.released(vanished), b.released(vanished)),
    tokenGone: (op) => (a.tokenGone(op), b.tokenGone(op)),
    leaseLost: (reason) => (a.leaseLost(reason), b.leaseLost(reason)),
    deadlock: () => (a.deadlock(), b.deadlock()),
  };
}
