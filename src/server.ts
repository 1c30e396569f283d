// Wiring only: the backend (Redis given or embedded, or Redlock's masters, src/backend) with its
// lock engine, the gRPC server with health and reflection, and an orderly stop.
import { join } from 'node:path';
import { type Metadata, Server, ServerCredentials, type UntypedServiceImplementation } from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation, protoPath as healthProtoPath } from 'grpc-health-check';
import { AdminServiceService } from '../gen/holdfast/v1/admin';
import type { Backend, BackendConfig } from './backend/backend';
import { startRedisBackend, usesEmbeddedRedis } from './backend/redis';
import { startRedlockBackend } from './backend/redlock';
import type { LockBackend } from './engine/backend';
import type { EngineObserver } from './engine/observer';
import { LockServiceService } from '../gen/holdfast/v1/lock';
import { Credentials } from './auth/credentials';
import { DEFAULT_NAMESPACE } from './engine/keys';
import { adminService, CallCounter } from './transport/admin';
import { AuthGate } from './transport/auth';
import { Namespaces } from './transport/namespaces';
import { guardRequests, type Rejection } from './transport/decode';
import { addHealthService } from './transport/health';
import { lockService } from './transport/lock-service';
import type { AbnormalHoldEnd } from './transport/hold';
import { readRequestShapes } from './transport/wire';
import { CallLimits, DEFAULT_LIMITS, serverOptionsFor, type ServerLimits } from './transport/limits';
import { enforcePingPolicy } from './transport/ping-policy';
import { startHttpListener, type HttpListener, type HttpRoutes } from './http/listener';
import { listenError } from './net/listen';
import { lockDataDir } from './redis/data-dir-lock';
import { StartGate } from './transport/start-gate';
import { dashboardHandler } from './dashboard/routes';
import { countGrants, GrantRate } from './overview/grant-rate';
import { Metrics } from './observability/metrics';
import { bothObservers, startTracing } from './observability/tracing';
import type { TracerProvider } from '@opentelemetry/api';
import { packageRoot } from './package-root';
import { holdfastVersion } from './version';
import { serverTls, type ServerTlsFiles } from './tls/server-credentials';
import { FenceRing } from './fencing/ring';
import { leaseClockOf } from './fencing/lease-clock';

export interface ServerConfig extends BackendConfig {
  listen: string;
  /** Serve TLS (mutual with clientCaFile), re-reading the files every reloadCheckMs. Absent: plaintext. */
  tls?: ServerTlsFiles & { reloadCheckMs: number };
  defaultTtlMs: number;
  maxHoldMs: number;
  lockDelayMs: number;
  /** Free a Hold's lock the moment its stream ends, however it ends (not only on the holder's word). */
  releaseOnDisconnect?: boolean;
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  deadlineMarginMs: number;
  /** Caps on message size, streams, pings, waiters and Hold streams; DEFAULT_LIMITS for any left out. */
  limits?: Partial<ServerLimits>;
  /** HOST:PORT of the one HTTP listener: /metrics, /healthz, /readyz and the dashboard; absent: no metrics are kept. */
  httpListen?: string;
  /** Traces go here (tests: an in-memory exporter); without it, over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set, else nowhere. */
  tracerProvider?: TracerProvider;
  /** API keys and client certificates, each with its namespace and role; none: no authentication, one default namespace. */
  credentials?: Credentials;
  /** The key fences are signed with and the further public keys published (--fence-signing-key, --fence-verify-keys); absent: no fence is signed. */
  fenceKeys?: FenceRing;
}

export interface RunningServer {
  port: number;
  /** The Redis URL (its password masked), or the cluster's seed nodes joined with commas. */
  redisUrl: string;
  engine: LockBackend;
  /** The port of the HTTP listener (/metrics, probes, the dashboard), with httpListen. */
  httpPort?: number;
  /** Takes a new set of credentials (a reload); open calls it takes the right from end. Returns how many ended. */
  updateCredentials(credentials: Credentials): number;
  /** Stops taking calls, ends waits and holds with UNAVAILABLE (releasing their locks), stops Redis if embedded. */
  stop(): Promise<void>;
}

const SERVICE = 'holdfast.v1.LockService';

/** CallLimits names the default namespace ''. */
const namespaceLabel = (namespace: string) => (namespace === DEFAULT_NAMESPACE ? '' : namespace);
export async function startServer(config: ServerConfig): Promise<RunningServer> {
  const log = config.logger;
  // First: unusable certificate files fail the start before anything is started.
  const tls =
    config.tls &&
    serverTls(config.tls, config.tls.reloadCheckMs, {
      onReloaded: () => log.info('TLS certificate files changed: new connections get the new certificate'),
      onReloadFailed: (problem) => log.warn({ problem }, 'TLS certificate files changed but cannot be used yet; still serving the previous ones'),
    });
  // Then the data dir the embedded Redis keeps its data in: refused while another server holds it.
  const dataDirLock = usesEmbeddedRedis(config) ? lockDataDir(config.dataDir, config.listen) : undefined;
  const logError = (err: unknown) => log.error({ err }, 'unexpected error');
  const limits: ServerLimits = { ...DEFAULT_LIMITS, ...config.limits };
  const health = new HealthImplementation({ '': 'NOT_SERVING', [SERVICE]: 'NOT_SERVING' });
  let serving = false;
  const setHealth = (servingNow: boolean) => {
    serving = servingNow;
    const state = servingNow ? 'SERVING' : 'NOT_SERVING';
    health.setStatus('', state);
    health.setStatus(SERVICE, state);
  };
  // SERVING while the backend can make new grants (Redis answers, no quarantine; a Redlock majority).
  let backend: Backend | undefined;
  const refreshHealth = () => setHealth(backend?.serving() ?? false);
  const metrics = config.httpListen ? new Metrics() : undefined;
  const tracing = startTracing(config.tracerProvider);
  const fenceKeys = config.fenceKeys ?? new FenceRing(undefined);
  const grants = new GrantRate(); // for the dashboard: a few empty calls per grant when nobody looks
  const observer = [metrics, tracing?.observer].reduce<EngineObserver>((both, one) => (one ? bothObservers(both, one) : both), countGrants(grants));

  const gate = new StartGate();
  const calls = new CallCounter();
  const auth = new AuthGate(config.credentials ?? new Credentials());
  const callLimits = new CallLimits(limits, (metadata) => namespaceLabel(auth.namespaceOf(metadata)), metrics && ((limit) => metrics.limitRefused(limit)));
  const server = new Server({
    // grpc-js hands a call's metadata and messages to these in order, and a status sent by one
    // reaches only those before it: the start gate first (a call that comes while the backend
    // starts waits there, seen by no other), RPC metrics and traces (they see every status,
    // refusals included), the count of calls in flight, authentication, then the caps on waiters
    // and Hold streams (per namespace: known once authenticated; a refused call is never counted).
    interceptors: [
      gate.interceptor,
      ...(metrics ? [metrics.rpcInterceptor] : []),
      ...(tracing ? [tracing.interceptor] : []),
      calls.interceptor,
      auth.interceptor,
      callLimits.interceptor,
    ],
    ...serverOptionsFor(limits),
    'grpc.keepalive_time_ms': config.keepaliveTimeMs,
    'grpc.keepalive_timeout_ms': config.keepaliveTimeoutMs,
  });
  const protoDir = join(packageRoot(), 'proto');
  // One line per call refused before its handler (undecodable, or a string that is not UTF-8); a metrics counter goes here too.
  const onRejected = (rejection: Rejection) => log.debug(rejection, 'refused a request that is not a valid message');
  // Registered now, served once the backend is up (the gate): they need its engine.
  const guarded = guardRequests(LockServiceService, gate.later(LockServiceService), {
    shapes: readRequestShapes('holdfast/v1/lock.proto', [protoDir]),
    onRejected,
  });
  server.addService(guarded.service, guarded.implementation);
  const admin = guardRequests(AdminServiceService, gate.later(AdminServiceService), {
    shapes: readRequestShapes('holdfast/v1/admin.proto', [protoDir]),
    onRejected,
  });
  server.addService(admin.service, admin.implementation);
  addHealthService(server, health, { shapes: readRequestShapes(healthProtoPath, []), onRejected });
  const descriptors = protoLoader.loadSync([join(protoDir, 'holdfast/v1/lock.proto'), join(protoDir, 'holdfast/v1/admin.proto'), healthProtoPath], {
    includeDirs: [protoDir],
    keepCase: true, // reflection serves the proto's field names (ttl_ms), as grpcurl's JSON expects
  });
  new ReflectionService(descriptors).addToServer(server);

  // The ports before the backend: one in use is refused before a redis-server is started, and
  // each is ours from here on (a probe let go again could be taken before the real bind).
  let namespaces: Namespaces | undefined;
  let port: number;
  let http: HttpListener | undefined;
  try {
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(config.listen, tls?.credentials ?? ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    ).catch((err: unknown) => {
      throw listenError(config.listen, '--listen', err);
    });
    if (config.httpListen && metrics) {
      const httpRoutes = httpRoutesFor(metrics, {
        serving: () => serving,
        backend: () => backend,
        namespaces: () => namespaces,
        grants,
        principalOfKey: (key) => auth.principalOfKey(key),
        fenceKeys,
      });
      http = await startHttpListener(config.httpListen, httpRoutes);
    }
  } catch (err) {
    server.forceShutdown();
    dataDirLock?.release();
    throw err;
  }
  dataDirLock?.update(config.listen.replace(/:0$/, `:${port}`));
  enforcePingPolicy(server, {
    ...limits,
    connection: (session) => callLimits.connection(session),
    onTooManyPings: (session) => {
      metrics?.limitRefused('min-ping-interval-ms');
      log.warn({ peer: `${session.socket?.remoteAddress}:${session.socket?.remotePort}` }, 'closed a connection that pinged too often (GOAWAY too_many_pings)');
    },
  });

  try {
    backend = config.redlock
      ? await startRedlockBackend(config, refreshHealth, observer)
      : await startRedisBackend(config, limits.maxWaitersPerLock, refreshHealth, observer);
  } catch (err) {
    // Leave nothing behind: the ports, the data dir.
    server.forceShutdown();
    await http?.close();
    dataDirLock?.release();
    throw err;
  }
  refreshHealth();
  const { engine } = backend;
  const running = backend;
  const leaseClock =
    fenceKeys.signing &&
    (await leaseClockOf(running.redisTimeMs, {
      onReadFailed: (err) =>
        log.warn({ err: String((err as Error)?.message ?? err) }, "could not read Redis's clock (TIME): signed fences state lease ends by the last reading"),
    }));
  if (fenceKeys.signing) {
    const clock = running.redisTimeMs ? "Redis's clock" : "this server's clock (Redlock: no one Redis clock)";
    log.info({ keyId: fenceKeys.signing.keyId, published: fenceKeys.published.map((k) => k.keyId), leaseEnds: clock }, 'signing fences');
  }
  const serviceOptions = (namespace: string) => ({
    defaultTtlMs: config.defaultTtlMs,
    deadlineMarginMs: config.deadlineMarginMs,
    maxHoldMs: config.maxHoldMs,
    lockDelayMs: config.lockDelayMs,
    releaseOnDisconnect: config.releaseOnDisconnect ?? false,
    maxSessionOps: limits.maxSessionOps,
    maxSessionWaiters: limits.maxSessionWaiters,
    maxSessionLocks: limits.maxSessionLocks,
    opRefusal: (metadata: Metadata, path: string) => auth.opRefusal(metadata, path),
    onOp: metrics && ((method: string, code: number) => metrics.sessionOp(method, code)),
    traceOp: tracing?.sessionOp,
    namespaceSlots: {
      take: (kind: 'waiters' | 'holds') => callLimits.takeNamespaceSlot(namespaceLabel(namespace), kind),
      give: (kind: 'waiters' | 'holds') => callLimits.giveNamespaceSlot(namespaceLabel(namespace), kind),
    },
    logError,
    signFence: leaseClock ? fenceKeys.signerFor(namespace, leaseClock) : undefined,
    // One line per lost lease and per Hold stream that broke; a shutdown ends them all, said once.
    onAbnormalEnd: ({ name, holdId, reason, message }: AbnormalHoldEnd) => {
      if (reason === 'server_shutdown') return;
      const where = namespace === DEFAULT_NAMESPACE ? {} : { namespace };
      log.warn({ lock: name, ...where, holdId, reason, detail: message }, reason === 'stream_lost' ? 'hold stream ended without a cancel' : 'lease lost');
    },
  });
  const tenants = new Namespaces(
    engine,
    (namespace) => running.engineForNamespace(namespace),
    (e, namespace) => lockService(e, serviceOptions(namespace)) as unknown as UntypedServiceImplementation,
  );
  namespaces = tenants;
  metrics?.watch({
    stats: () => tenants.stats(),
    redisUp: () => running.redisUp?.() ?? running.serving(),
    grantsBlocked: () => !!running.grantsBlocked?.(),
  });
  gate.open([
    [LockServiceService, tenants.dispatch(LockServiceService, (call) => auth.namespaceOf(call.metadata))],
    [AdminServiceService, adminService(tenants, calls, fenceKeys)],
  ]);
  if (http) log.info({ httpListen: config.httpListen, port: http.port }, 'serving the dashboard, /metrics, /healthz and /readyz');
  if (tracing && !config.tracerProvider) log.info('exporting traces over OTLP (OTEL_EXPORTER_OTLP_ENDPOINT)');
  log.info({ version: holdfastVersion(), listen: config.listen, port, tls: tls ? (tls.mutual ? 'mutual' : 'server') : 'off' }, 'holdfast listening');

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      log.info('stopping: ending waits and holds, releasing their locks');
      setHealth(false);
      await tenants.close();
      leaseClock?.stop();
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2000);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      await http?.close();
      await tracing?.shutdown().catch(() => {});
      await running.close();
      dataDirLock?.release();
    })());
  const updateCredentials = (credentials: Credentials) => auth.update(credentials);
  return { port, redisUrl: running.description, engine, httpPort: http?.port, updateCredentials, stop };
}

interface HttpState {
  serving(): boolean;
  /** Absent while the server starts. */
  backend(): Backend | undefined;
  namespaces(): Namespaces | undefined;
  grants: GrantRate;
  principalOfKey: Parameters<typeof dashboardHandler>[0]['principalOfKey'];
  fenceKeys: FenceRing;
}

/** The HTTP listener's routes: bound before the backend is up, so each asks for it when called. */
function httpRoutesFor(metrics: Metrics, state: HttpState): HttpRoutes {
  const notReady = () => {
    const running = state.backend();
    if (state.serving()) return null;
    if (!running) return 'the server is starting';
    if (running.redisUp?.() === false) return 'Redis is not reachable';
    return running.grantsBlocked?.() ?? 'the server is starting or stopping, or cannot grant now';
  };
  const backendState = () => {
    const running = state.backend()!;
    return { serving: state.serving(), redisReachable: running.redisUp?.() ?? running.serving(), quarantine: running.grantsBlocked?.() ?? null };
  };
  const dashboard = dashboardHandler({
    sourceFor: (namespace) => ({ engine: state.namespaces()!.engineOf(namespace), grants: state.grants, backendState }),
    principalOfKey: state.principalOfKey,
  });
  return {
    metrics: async () => ({ contentType: metrics.registry.contentType, body: await metrics.registry.metrics() }),
    notReady,
    fenceKeys: () => state.fenceKeys.jwkSet(),
    mounted: (req, res, path) => {
      if (state.namespaces()) return dashboard(req, res, path);
      res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('holdfast is starting\n');
      return true;
    },
  };
}
