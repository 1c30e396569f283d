// The server binds its port before it starts its backend (the embedded redis-server, the Redis
// connections), so that a port in use is found before anything is started, and nothing can take
// the port in between. Until the backend is up the services that need it are registered (a call
// would otherwise be UNIMPLEMENTED) but closed: this gate answers their calls UNAVAILABLE, which
// clients retry. Health and reflection answer meanwhile (health says NOT_SERVING).
import {
  Metadata,
  ServerInterceptingCall,
  status,
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
  private opened = false;

  /** Outermost: a call refused here reaches no other interceptor, no handler. */
  readonly interceptor: ServerInterceptor = (definition, call: ServerInterceptingCallInterface) => {
    if (this.opened || !GATED.test(definition.path)) return new ServerInterceptingCall(call);
    const intercepting: ServerInterceptingCall = new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: () =>
            intercepting.sendStatus({ code: status.UNAVAILABLE, details: 'holdfast is starting: try again in a moment', metadata: new Metadata() }),
          onReceiveMessage: () => {},
          onReceiveHalfClose: () => {},
        }),
    });
    return intercepting;
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

  /** Lets calls through, each service's to the implementation given here. */
  open(implementations: [ServiceDefinition, UntypedServiceImplementation][]): void {
    for (const [service, implementation] of implementations) this.implementations.set(service, implementation);
    this.opened = true;
  }
}
