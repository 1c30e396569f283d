package holdfast.fencing;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * The resource side's gRPC guard: every call (every method, unless {@link #guards} narrows it) passes
 * {@link FenceGuard#admit} on its metadata before any message. A refusal closes the call with the code of
 * clients/conformance/signed-fence.md (INVALID_ARGUMENT, PERMISSION_DENIED, FAILED_PRECONDITION,
 * UNAVAILABLE, or INTERNAL for a guard that cannot tell the lock) and its message; the handler never runs. The handler reads the admitted fence with
 * {@link Fence#current()} (the call's Context, {@link #FENCE}).
 *
 * <pre>{@code
 * FenceGuard guard = FenceGuard.builder(store).keys(ring).build();
 * Server server = NettyServerBuilder.forPort(port)
 *     .addService(ServerInterceptors.intercept(new MyResource(), new FenceServerInterceptor(guard).lock("orders")))
 *     .build().start();
 * }</pre>
 */
public final class FenceServerInterceptor implements ServerInterceptor {
  /** The admitted call's fence, for the handler. */
  public static final Context.Key<Fence> FENCE = Context.key("holdfast-fence");

  static final Metadata.Key<String> SIGNED_KEY = Metadata.Key.of(FenceWire.GRPC_SIGNED, Metadata.ASCII_STRING_MARSHALLER);
  static final Metadata.Key<String> LOCK_KEY = Metadata.Key.of(FenceWire.GRPC_LOCK, Metadata.ASCII_STRING_MARSHALLER);
  static final Metadata.Key<String> TOKEN_KEY = Metadata.Key.of(FenceWire.GRPC_TOKEN, Metadata.ASCII_STRING_MARSHALLER);

  /** The lock of the resource a call touches, from its full method name ({@code pkg.Service/Method}) and metadata. */
  @FunctionalInterface
  public interface LockRule {
    /** The lock; null refuses the call (INTERNAL, {@code fence_guard_misconfigured}). */
    String lock(String fullMethodName, Metadata headers);
  }

  private final FenceGuard guard;
  private final LockRule lock;
  private final Predicate<String> guards;
  private final boolean lockRule; // a lock was given: a rule that gives none fails closed

  /** Unsigned fences, no lock binding: the guard as it was before signed fences. */
  public FenceServerInterceptor(FenceStore store) {
    this(FenceGuard.builder(store).build());
  }

  public FenceServerInterceptor(FenceGuard guard) {
    this(Objects.requireNonNull(guard, "guard"), (method, headers) -> null, false, method -> true);
  }

  private FenceServerInterceptor(FenceGuard guard, LockRule lock, boolean lockRule, Predicate<String> guards) {
    this.guard = guard;
    this.lock = lock;
    this.lockRule = lockRule;
    this.guards = guards;
  }

  /** This interceptor, for a service protected by {@code lock}: a fence for another lock is refused (PERMISSION_DENIED). */
  public FenceServerInterceptor lock(String lock) {
    Objects.requireNonNull(lock, "lock");
    return lock((method, headers) -> lock);
  }

  /** This interceptor, with the lock of each call's resource given by {@code rule}. */
  public FenceServerInterceptor lock(LockRule rule) {
    return new FenceServerInterceptor(guard, Objects.requireNonNull(rule, "rule"), true, guards);
  }

  /** This interceptor, guarding only the methods {@code rule} selects by full name (default: every method). */
  public FenceServerInterceptor guards(Predicate<String> rule) {
    return new FenceServerInterceptor(guard, lock, lockRule, Objects.requireNonNull(rule, "rule"));
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    String method = call.getMethodDescriptor().getFullMethodName();
    if (!guards.test(method)) {
      return next.startCall(call, headers);
    }
    Fence fence;
    try {
      fence = guard.admit(FenceGuard.Transport.GRPC, name -> values(headers, name), lock.lock(method, headers), lockRule);
    } catch (FenceRefusal refusal) {
      call.close(refusal.status(), new Metadata());
      return new ServerCall.Listener<Q>() {};
    }
    return Contexts.interceptCall(Context.current().withValue(FENCE, fence), call, headers, next);
  }

  private static List<String> values(Metadata headers, String name) {
    Iterable<String> all = headers.getAll(Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER));
    List<String> values = new ArrayList<>();
    if (all != null) {
      all.forEach(values::add);
    }
    return values;
  }
}
