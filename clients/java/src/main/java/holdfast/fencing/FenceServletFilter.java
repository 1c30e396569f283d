package holdfast.fencing;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The resource side's HTTP guard for Jakarta Servlet 6 containers (Tomcat 10.1+, Jetty 12, Spring
 * Boot 3, ...): every request (every method, every path, unless {@link #guards} narrows it) passes
 * {@link FenceGuard#admit} before the rest of the chain. A refusal is answered with its status (400, 403,
 * 409, 503, or 500 for a guard that cannot tell the lock) and the JSON body of
 * clients/conformance/signed-fence.md; the servlet never runs. The servlet reads the admitted fence with
 * {@link Fence#current()} on the request's thread, or the request attribute {@link #ATTRIBUTE} (also
 * after an async hand-off). Needs {@code jakarta.servlet:jakarta.servlet-api} (an optional dependency:
 * your container brings it).
 *
 * <pre>{@code
 * context.addFilter("fence", new FenceServletFilter(guard).lock(request -> "orders/" + request.getPathInfo()));
 * }</pre>
 */
public final class FenceServletFilter implements Filter {
  /** The request attribute holding the admitted request's {@link Fence}. */
  public static final String ATTRIBUTE = FenceFilter.ATTRIBUTE;

  private final RequestGuard<HttpServletRequest> rules;

  /** Unsigned fences, no lock binding: the guard as it was before signed fences. */
  public FenceServletFilter(FenceStore store) {
    this(FenceGuard.builder(store).build());
  }

  public FenceServletFilter(FenceGuard guard) {
    this(new RequestGuard<>(guard));
  }

  private FenceServletFilter(RequestGuard<HttpServletRequest> rules) {
    this.rules = rules;
  }

  /** This filter, for a resource protected by {@code lock}: a fence for another lock is refused (403). */
  public FenceServletFilter lock(String lock) {
    Objects.requireNonNull(lock, "lock");
    return lock(request -> lock);
  }

  /**
   * This filter, with the lock of each request's resource given by {@code rule}; a request it gives
   * null for is refused (500 {@code fence_guard_misconfigured}).
   */
  public FenceServletFilter lock(Function<HttpServletRequest, String> rule) {
    return new FenceServletFilter(rules.lock(rule));
  }

  /** This filter, guarding only the requests {@code rule} selects (default: every request). */
  public FenceServletFilter guards(Predicate<HttpServletRequest> rule) {
    return new FenceServletFilter(rules.guards(rule));
  }

  @Override
  public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
      throws IOException, ServletException {
    if (!(request instanceof HttpServletRequest) || !rules.guards((HttpServletRequest) request)) {
      chain.doFilter(request, response);
      return;
    }
    HttpServletRequest http = (HttpServletRequest) request;
    Fence fence;
    try {
      fence = rules.admit(http, name -> {
        Enumeration<String> values = http.getHeaders(name);
        return values == null ? List.of() : Collections.list(values);
      });
    } catch (FenceRefusal refusal) {
      byte[] bytes = RequestGuard.body(refusal);
      HttpServletResponse refused = (HttpServletResponse) response;
      refused.setStatus(refusal.reason().httpStatus());
      refused.setContentType("application/json");
      refused.setContentLength(bytes.length);
      refused.getOutputStream().write(bytes);
      return;
    }
    http.setAttribute(ATTRIBUTE, fence);
    Fence outer = RequestGuard.enter(fence);
    try {
      chain.doFilter(request, response);
    } finally {
      RequestGuard.leave(outer);
    }
  }
}
