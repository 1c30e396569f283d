// The server binds its port before it starts its backend (the embedded redis-server, the Redis
// connections), so that a port in use is found before anything is started, and nothing can take
// the port in between. Until the backend is up the services that need it are registered (a call
// would otherwise be UNIMPLEMENTED) behind this gate: a call to them waits here, unread, until the
// server is ready, as it would have waited for a connection to a server not yet listening; its own
// deadline or cancel ends the wait (grpc-js then never starts it). Health and reflection pass at
// once (health says NOT_SERVING).
import {
  ServerInterceptingCall,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  type ServiceDefinition,
  type UntypedHandleCall,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';

/** Calls to these services wait for open(); others (health, reflection) pass at once. */
const GATED = /^\/holdfast\./;

export class StartGate {
  private readonly implementations = new Map<ServiceDefinition, UntypedServiceImplementation>();
  private readonly waiting: (() => void)[] = [];
  private opened = false;

  /** Outermost: until open(), a gated call reaches no other interceptor, no handler. */
  readonly interceptor: ServerInterceptor = (definition, call: ServerInterceptingCallInterface) => {
    if (this.opened || !GATED.test(definition.path)) return new ServerInterceptingCall(call);
    return new ServerInterceptingCall(call, {
      start: (next) => (this.opened ? next() : this.waiting.push(() => next())),
    });
  };

  /** An implementation of `service` to register now: each call goes to the one open() gives. */
  later(service: ServiceDefinition): UntypedServiceImplementation {
    const delegate: UntypedServiceImplementation = {};
    for (const [key, method] of Object.entries(service)) {
      // As grpc-js does: a handler may be keyed by the method's original (lower camel case) name.
      delegate[key] = ((call: unknown, callback?: unknown) => {
        const implementation = this.implementations.get(service)!;
        const handler = (implementation[key] ?? implementation[method.originalName ?? key]) as (c: unknown, cb?: unknown) => void;
        handler(call, callback);
      }) as UntypedHandleCall;
    }
    return delegate;
  }

  /** Lets calls through, each service's to the implementation given here; the waiting ones first. */
  open(implementations: [ServiceDefinition, UntypedServiceImplementation][]): void {
    for (const [service, implementation] of implementations) this.implementations.set(service, implementation);
    this.opened = true;
    for (const start of this.waiting.splice(0)) start();
  }
}
