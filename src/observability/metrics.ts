// Prometheus metrics (prom-client): the engine's observer, one server interceptor for RPCs, and
// gauges read when scraped. Lock names never become label values (their number is unbounded):
// every label here takes a few known values. Labelled series are bound once and kept, so an
// observation is a lookup and an add, not a label-set hash per call.
import { ServerInterceptingCall, status, type ServerInterceptingCallInterface, type ServerInterceptor } from '@grpc/grpc-js';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EngineStats } from '../engine/engine';
import type { AcquireOutcome, EngineObserver, Probe, ScriptRun } from '../engine/observer';
import type { LostReason } from '../engine/types';
import type { LimitName } from '../config/limit-names';

/** What the gauges read when scraped. */
export interface MetricSources {
  stats(): EngineStats;
  /** Redis answers (the commands connection is ready). */
  redisUp(): boolean;
  /** New grants are held back (a failover quarantine). */
  grantsBlocked(): boolean;
}

/** From half a millisecond (a grant on a local Redis) to a minute of waiting. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** A script's round trip: 100 µs to a second (the server's Redis command timeout). */
const SCRIPT_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

const CODE_NAMES: string[] = [];
for (const [name, code] of Object.entries(status)) if (typeof code === 'number') CODE_NAMES[code] = name;

type Child = { inc(value?: number): void };
type Observed = { observe(value: number): void };

export class Metrics implements EngineObserver {
  readonly registry = new Registry();
  private sources?: MetricSources;

  private readonly rpcs = new Counter({
    name: 'holdfast_rpcs_total',
    help: 'gRPC calls finished, by method and status code (CANCELLED: the client went away first)',
    labelNames: ['method', 'code'] as const,
    registers: [this.registry],
  });
  private readonly acquireSeconds = new Histogram({
    name: 'holdfast_acquire_duration_seconds',
    help: 'Acquire and Hold, from the request to the grant or the refusal, waiting included',
    labelNames: ['outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly waitSeconds = new Histogram({
    name: 'holdfast_wait_duration_seconds',
    help: 'Time queued behind other holders, by how the wait ended',
    labelNames: ['outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly handoffSeconds = new Histogram({
    name: 'holdfast_handoff_duration_seconds',
    help: 'From the wake-up message of the script that freed a lock (and served its queue) to the next holder having its grant on this server',
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly grants = new Counter({ name: 'holdfast_grants_total', help: 'Locks granted to Acquire and Hold calls', registers: [this.registry] });
  private readonly releases = new Counter({
    name: 'holdfast_releases_total',
    help: 'Holds given back: by their holder (Release, a cancelled Hold) or for a vanished Hold client (kept closed until its lease runs out)',
    labelNames: ['by'] as const,
    registers: [this.registry],
  });
  private readonly expiries = new Counter({
    name: 'holdfast_lease_expiries_total',
    help: 'Leases found to have run out: a Release or Renew whose grant was gone, or a Hold whose renewal found it gone (a normal release, of a HoldSet too, counts none)',
    labelNames: ['seen_by'] as const,
    registers: [this.registry],
  });
  private readonly leasesLost = new Counter({
    name: 'holdfast_leases_lost_total',
    help: 'Hold streams whose lease ended other than by their holder, by reason (the LostReason sent to the client)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  private readonly deadlocks = new Counter({
    name: 'holdfast_deadlocks_total',
    help: "Waits of this server's callers answered ABORTED to break a cycle of waits among owners (docs/deadlocks.md)",
    registers: [this.registry],
  });
  private readonly scriptSeconds = new Histogram({
    name: 'holdfast_redis_script_duration_seconds',
    help: "Round trip of one Lua script call (renewBatch: one tick's pipelined renewals on one node), as this server sees it",
    labelNames: ['script'] as const,
    buckets: SCRIPT_BUCKETS,
    registers: [this.registry],
  });
  private readonly redisErrors = new Counter({
    name: 'holdfast_redis_errors_total',
    help: 'Script calls that failed: Redis unreachable, timed out, or answered an error',
    labelNames: ['script'] as const,
    registers: [this.registry],
  });

  private readonly limitRefusals = new Counter({
    name: 'holdfast_limit_refusals_total',
    help: 'Calls refused RESOURCE_EXHAUSTED, and connections closed for their pings, by the limit (its flag name)',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });

  private readonly rpcChildren = new Map<string, Child[]>();
  private readonly scriptChildren = new Map<string, Observed>();
  private readonly errorChildren = new Map<string, Child>();
  private readonly acquireByOutcome: Record<AcquireOutcome, Observed>;
  private readonly waitByOutcome: Record<AcquireOutcome, Observed>;
  private readonly releasedBy: { holder: Child; vanished: Child };

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'holdfast_' });
    const outcomes = (h: Histogram<'outcome'>) => ({ granted: h.labels('granted'), not_granted: h.labels('not_granted'), error: h.labels('error') });
    this.acquireByOutcome = outcomes(this.acquireSeconds);
    this.waitByOutcome = outcomes(this.waitSeconds);
    this.releasedBy = { holder: this.releases.labels('holder'), vanished: this.releases.labels('vanished') };
    const metrics = this;
    const add = (name: string, help: string, read: (s: MetricSources) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          if (metrics.sources) this.set(read(metrics.sources));
        },
      });
    add('holdfast_waiters', 'Queued waiters this server answers', (s) => s.stats().waiters);
    add('holdfast_wait_lines', 'Locks this server has waiters on', (s) => s.stats().lines);
    add('holdfast_holds_active', 'Leases this server keeps renewing (granted Hold streams)', (s) => s.stats().keptLeases);
    add('holdfast_redis_up', '1 while Redis answers this server', (s) => Number(s.redisUp()));
    add('holdfast_grants_blocked', '1 while new grants are held back (failover quarantine)', (s) => Number(s.grantsBlocked()));
  }

  /** A call or connection was refused for `limit`. */
  limitRefused(limit: LimitName): void {
    this.limitRefusals.labels(limit).inc();
  }

  /** Where the gauges read from, once the engine exists. */
  watch(sources: MetricSources): void {
    this.sources = sources;
  }

  /** Counts every call once, when grpc-js reports its status or its end without one. */
  readonly rpcInterceptor: ServerInterceptor = (method, call: ServerInterceptingCallInterface) => {
    const byCode = this.rpcChildrenOf(method.path);
    let counted = false;
    const count = (code: number) => {
      if (counted) return;
      counted = true;
      this.countRpc(byCode, method.path, code);
    };
    return new ServerInterceptingCall(call, {
      start: (next) => next({ onCancel: () => count(status.CANCELLED) }),
      sendStatus: (statusObject, next) => {
        count(statusObject.code);
        next(statusObject);
      },
    });
  };

  /**
   * One operation of a Session answered, counted as its unary twin under the method
   * `holdfast.v1.LockService/Session/<Method>` (the Session stream itself counts once, at its end).
   */
  sessionOp(method: string, code: number): void {
    const path = `/holdfast.v1.LockService/Session/${method}`;
    this.countRpc(this.rpcChildrenOf(path), path, code);
  }

  private countRpc(byCode: Child[], path: string, code: number): void {
    (byCode[code] ??= this.rpcs.labels(path.slice(1), CODE_NAMES[code] ?? String(code))).inc();
  }

  private rpcChildrenOf(path: string): Child[] {
    let children = this.rpcChildren.get(path);
    if (!children) this.rpcChildren.set(path, (children = []));
    return children;
  }

  scriptStart(): Probe {
    return performance.now();
  }

  scriptEnd(probe: Probe, script: ScriptRun, failed: boolean): void {
    let child = this.scriptChildren.get(script);
    if (!child) this.scriptChildren.set(script, (child = this.scriptSeconds.labels(script)));
    child.observe((performance.now() - (probe as number)) / 1000);
    if (!failed) return;
    let errors = this.errorChildren.get(script);
    if (!errors) this.errorChildren.set(script, (errors = this.redisErrors.labels(script)));
    errors.inc();
  }

  acquireStart(): Probe {
    return performance.now();
  }

  acquireEnd(probe: Probe, outcome: AcquireOutcome): void {
    this.acquireByOutcome[outcome].observe((performance.now() - (probe as number)) / 1000);
    if (outcome === 'granted') this.grants.inc();
  }

  waitStart(): Probe {
    return performance.now();
  }

  waitEnd(probe: Probe, outcome: AcquireOutcome): void {
    this.waitByOutcome[outcome].observe((performance.now() - (probe as number)) / 1000);
  }

  handoff(ms: number): void {
    this.handoffSeconds.observe(ms / 1000);
  }

  released(vanished: boolean): void {
    (vanished ? this.releasedBy.vanished : this.releasedBy.holder).inc();
  }

  tokenGone(op: 'release' | 'renew'): void {
    this.expiries.labels(op).inc();
  }

  leaseLost(reason: LostReason): void {
    this.leasesLost.labels(reason).inc();
    if (reason === 'expired') this.expiries.labels('hold').inc();
  }

  deadlock(): void {
    this.deadlocks.inc();
  }
}
