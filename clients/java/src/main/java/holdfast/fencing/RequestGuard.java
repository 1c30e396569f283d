package holdfast.fencing;

import com.google.gson.Gson;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * What an HTTP guard keeps besides its {@link FenceGuard}, for requests of type {@code R}: which requests
 * it guards, and the lock of each one's resource. Shared by {@link FenceFilter} and {@link FenceServletFilter}.
 */
final class RequestGuard<R> {
  private static final Gson GSON = new Gson();
  /** The admitted fence while the handler runs on this thread ({@link Fence#current()}). */
  static final ThreadLocal<Fence> CURRENT = new ThreadLocal<>();

  private final FenceGuard guard;
  private final Function<R, String> lock;
  private final boolean lockRule; // a lock was given: a rule that gives none fails closed
  private final Predicate<R> guards;

  RequestGuard(FenceGuard guard) {
    this(Objects.requireNonNull(guard, "guard"), request -> null, false, request -> true);
  }

  private RequestGuard(FenceGuard guard, Function<R, String> lock, boolean lockRule, Predicate<R> guards) {
    this.guard = guard;
    this.lock = lock;
    this.lockRule = lockRule;
    this.guards = guards;
  }

  RequestGuard<R> lock(Function<R, String> rule) {
    return new RequestGuard<>(guard, Objects.requireNonNull(rule, "rule"), true, guards);
  }

  RequestGuard<R> guards(Predicate<R> rule) {
    return new RequestGuard<>(guard, lock, lockRule, Objects.requireNonNull(rule, "rule"));
  }

  boolean guards(R request) {
    return guards.test(request);
  }

  Fence admit(R request, FenceGuard.Headers headers) throws FenceRefusal {
    return guard.admit(FenceGuard.Transport.HTTP, headers, lock.apply(request), lockRule);
  }

  /** The refusal's JSON body. */
  static byte[] body(FenceRefusal refusal) {
    return GSON.toJson(refusal.body()).getBytes(StandardCharsets.UTF_8);
  }

  /** Makes {@code fence} this thread's {@link Fence#current()}; returns the one to give back to {@link #leave}. */
  static Fence enter(Fence fence) {
    Fence outer = CURRENT.get();
    CURRENT.set(fence);
    return outer;
  }

  static void leave(Fence outer) {
    CURRENT.set(outer);
  }
}
