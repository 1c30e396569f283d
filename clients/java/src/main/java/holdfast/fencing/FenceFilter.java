package holdfast.fencing;

import com.sun.net.httpserver.Filter;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.OutputStream;
import java.util.List;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The resource side's HTTP guard for the JDK's {@code com.sun.net.httpserver} (for servlets:
 * {@link FenceServletFilter}): every request (every method, every path, unless {@link #guards} narrows
 * it) passes {@link FenceGuard#admit} before the handler. A refusal is answered with its status (400,
 * 403, 409, 503, or 500 for a guard that cannot tell the lock) and the JSON body of
 * clients/conformance/signed-fence.md ({@code error}, {@code message} and the reason's fields); the
 * handler never runs. The handler reads the admitted fence with {@link Fence#current()} (or the exchange
 * attribute {@link #ATTRIBUTE}).
 *
 * <pre>{@code
 * FenceGuard guard = FenceGuard.builder(store).keys(FenceKeyRing.fromFile(Path.of("fence-keys.json"))).build();
 * server.createContext("/orders", handler).getFilters().add(new FenceFilter(guard).lock("orders"));
 * }</pre>
 */
public final class FenceFilter extends Filter {
  /** The exchange attribute holding the admitted request's {@link Fence}. */
  public static final String ATTRIBUTE = "holdfast.fence";

  private final RequestGuard<HttpExchange> rules;

  /** Unsigned fences, no lock binding: the guard as it was before signed fences. */
  public FenceFilter(FenceStore store) {
    this(FenceGuard.builder(store).build());
  }

  public FenceFilter(FenceGuard guard) {
    this(new RequestGuard<>(guard));
  }

  private FenceFilter(RequestGuard<HttpExchange> rules) {
    this.rules = rules;
  }

  /** This filter, for a resource protected by {@code lock}: a fence for another lock is refused (403). */
  public FenceFilter lock(String lock) {
    java.util.Objects.requireNonNull(lock, "lock");
    return lock(exchange -> lock);
  }

  /**
   * This filter, with the lock of each request's resource given by {@code rule}; a request it gives
   * null for is refused (500 {@code fence_guard_misconfigured}).
   */
  public FenceFilter lock(Function<HttpExchange, String> rule) {
    return new FenceFilter(rules.lock(rule));
  }

  /** This filter, guarding only the requests {@code rule} selects (default: every request). */
  public FenceFilter guards(Predicate<HttpExchange> rule) {
    return new FenceFilter(rules.guards(rule));
  }

  @Override
  public void doFilter(HttpExchange exchange, Chain chain) throws IOException {
    if (!rules.guards(exchange)) {
      chain.doFilter(exchange);
      return;
    }
    Fence fence;
    try {
      fence = rules.admit(exchange, name -> {
        List<String> values = exchange.getRequestHeaders().get(name);
        return values == null ? List.of() : values;
      });
    } catch (FenceRefusal refusal) {
      byte[] bytes = RequestGuard.body(refusal);
      exchange.getResponseHeaders().set("Content-Type", "application/json");
      exchange.sendResponseHeaders(refusal.reason().httpStatus(), bytes.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
      return;
    }
    exchange.setAttribute(ATTRIBUTE, fence);
    Fence outer = RequestGuard.enter(fence);
    try {
      chain.doFilter(exchange);
    } finally {
      RequestGuard.leave(outer);
    }
  }

  @Override
  public String description() {
    return "admits only requests with a holdfast fence for the resource's lock, not older than the newest seen";
  }
}
