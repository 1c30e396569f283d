// Namespaces: each has its own lock engine, with its own key prefix (keys.ts namespacePrefix),
// over the backend's one pair of Redis connections, and its own LockService implementation
// built on it. Every call is handed to its caller's namespace's implementation, so a name, a
// token or a request id only ever reaches the keys of the caller's own namespace, and no handler
// or engine learns that namespaces exist. The default namespace is the backend's engine itself.
import type { ServerSurfaceCall } from '@grpc/grpc-js/build/src/server-call';
import type { ServiceDefinition, UntypedHandleCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { LockBackend } from '../engine/backend';
import type { EngineStats } from '../engine/engine';
import { DEFAULT_NAMESPACE } from '../engine/keys';

interface Tenant {
  engine: LockBackend;
  service: UntypedServiceImplementation;
}

export class Namespaces {
  private readonly tenants = new Map<string, Tenant>();

  constructor(
    defaultEngine: LockBackend,
    /** A new engine with the namespace's own prefix. */
    private readonly engineFor: (namespace: string) => LockBackend,
    private readonly serviceOf: (engine: LockBackend, namespace: string) => UntypedServiceImplementation,
  ) {
    this.tenants.set(DEFAULT_NAMESPACE, { engine: defaultEngine, service: serviceOf(defaultEngine, DEFAULT_NAMESPACE) });
  }

  /** The namespace's lock engine (made on first use, as by a call). */
  engineOf(namespace: string): LockBackend {
    return this.tenant(namespace).engine;
  }

  /** The namespace's implementation, made on its first call. */
  private tenant(namespace: string): Tenant {
    let tenant = this.tenants.get(namespace);
    if (!tenant) {
      const engine = this.engineFor(namespace);
      tenant = { engine, service: this.serviceOf(engine, namespace) };
      this.tenants.set(namespace, tenant);
    }
    return tenant;
  }

  /** One implementation of `service` that hands each call to the one of its caller's namespace. */
  dispatch(service: ServiceDefinition, namespaceOf: (call: ServerSurfaceCall) => string): UntypedServiceImplementation {
    const implementation: UntypedServiceImplementation = {};
    for (const [key, method] of Object.entries(service)) {
      // As grpc-js does: a handler may be keyed by the method's original (lower camel case) name.
      const handlerOf = (impl: UntypedServiceImplementation) => impl[key] ?? impl[method.originalName ?? key];
      implementation[key] = ((call: ServerSurfaceCall, callback?: unknown) =>
        (handlerOf(this.tenant(namespaceOf(call)).service) as (c: unknown, cb?: unknown) => void)(call, callback)) as UntypedHandleCall;
    }
    return implementation;
  }

  /** Every namespace's engine counts, added up. */
  stats(): EngineStats {
    const sum = {} as Record<string, number | boolean>;
    for (const { engine } of this.tenants.values()) {
      for (const [k, v] of Object.entries(engine.stats())) sum[k] = typeof v === 'boolean' ? v || sum[k] === true : ((sum[k] as number) ?? 0) + v;
    }
    return sum as unknown as EngineStats;
  }

  /** Closes every namespace's engine (server shutdown). */
  async close(): Promise<void> {
    await Promise.all([...this.tenants.values()].map((t) => t.engine.close()));
  }
}
