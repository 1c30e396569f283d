package holdfast.fencing;

import com.google.gson.Gson;
import com.sun.net.httpserver.Filter;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The resource side's HTTP guard for the JDK's {@code com.sun.net.httpserver}: every request must carry
 * {@code Holdfast-Fence-Lock} and {@code Holdfast-Fence-Token}. A stale token gets 409 with
 * {@code {"error":"stale_fencing_token","lock":…,"token":…,"newest":…}}; a missing or malformed fence 400
 * with {@code {"error":"missing_fence"|"malformed_fence","field":…,"header":…}}; a store that cannot
 * answer 503. An accepted request's fence is the exchange attribute {@link #ATTRIBUTE}.
 *
 * <pre>{@code
 * server.createContext("/orders", handler).getFilters().add(new FenceFilter(store));
 * }</pre>
 */
public final class FenceFilter extends Filter {
  /** The exchange attribute holding the accepted request's {@link Fence}. */
  public static final String ATTRIBUTE = "holdfast.fence";
  private static final Gson GSON = new Gson();

  private final FenceStore store;

  public FenceFilter(FenceStore store) {
    this.store = Objects.requireNonNull(store, "store");
  }

  @Override
  public void doFilter(HttpExchange exchange, Chain chain) throws IOException {
    Fence fence;
    FenceCheck check;
    try {
      fence = FenceWire.parse(exchange.getRequestHeaders().getFirst(FenceWire.HTTP_LOCK),
          exchange.getRequestHeaders().getFirst(FenceWire.HTTP_TOKEN), FenceWire.HTTP_LOCK, FenceWire.HTTP_TOKEN);
      check = store.check(fence.lock(), fence.token());
    } catch (BadFenceException e) {
      Map<String, String> body = new LinkedHashMap<>();
      body.put("error", e.kind().code());
      body.put("field", e.field());
      body.put("header", e.header());
      body.put("message", e.getMessage());
      reply(exchange, 400, body);
      return;
    } catch (FenceStoreException e) {
      Map<String, String> body = new LinkedHashMap<>();
      body.put("error", "fence_store_unavailable");
      body.put("message", e.getMessage());
      reply(exchange, 503, body);
      return;
    }
    if (!check.accepted()) {
      Map<String, String> body = new LinkedHashMap<>();
      body.put("error", "stale_fencing_token");
      body.put("lock", fence.lock());
      body.put("token", fence.tokenText());
      body.put("newest", Long.toUnsignedString(check.newest()));
      body.put("message", FenceCheck.refusalMessage(fence, check.newest()));
      reply(exchange, 409, body);
      return;
    }
    exchange.setAttribute(ATTRIBUTE, fence);
    chain.doFilter(exchange);
  }

  private static void reply(HttpExchange exchange, int status, Map<String, String> body) throws IOException {
    byte[] bytes = GSON.toJson(body).getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  @Override
  public String description() {
    return "refuses requests whose holdfast fencing token is older than the newest seen for their lock";
  }
}
