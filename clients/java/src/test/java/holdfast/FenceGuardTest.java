package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.sun.net.httpserver.HttpContext;
import com.sun.net.httpserver.HttpServer;
import holdfast.fencing.Fence;
import holdfast.fencing.FenceAttach;
import holdfast.fencing.FenceCheck;
import holdfast.fencing.FenceFilter;
import holdfast.fencing.FenceServerInterceptor;
import holdfast.fencing.MemoryFenceStore;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The guards in front of a real resource: a grpc-java server with {@link FenceServerInterceptor} and the
 * JDK's HttpServer with {@link FenceFilter}, called with the fences of two real leases from a live
 * holdfast server, the first holder's now stale.
 */
class FenceGuardTest {
  private static final MethodDescriptor.Marshaller<String> TEXT = new MethodDescriptor.Marshaller<>() {
    @Override
    public InputStream stream(String value) {
      return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String parse(InputStream stream) {
      try {
        return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  };
  static final MethodDescriptor<String, String> WRITE = MethodDescriptor.<String, String>newBuilder()
      .setType(MethodDescriptor.MethodType.UNARY).setFullMethodName("holdfast.test.Resource/Write")
      .setRequestMarshaller(TEXT).setResponseMarshaller(TEXT).build();

  private static Support.Processes processes;
  private static ManagedChannel holdfastChannel;
  private static HoldfastClient client;

  @BeforeAll
  static void connect() throws Exception {
    String addr = System.getenv("HOLDFAST_ADDR");
    if (addr == null || System.getenv("HOLDFAST_REDIS_URL") == null) {
      processes = new Support.Processes();
      addr = processes.addr;
    }
    holdfastChannel = Support.readyChannel(addr);
    client = new HoldfastClient(holdfastChannel);
  }

  @AfterAll
  static void disconnect() throws Exception {
    client.close();
    holdfastChannel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    if (processes != null) {
      processes.close();
    }
  }

  /** Two successive leases of one lock: the first closed, so its fence is stale. */
  private static Fence[] staleAndNewest(String name) throws Exception {
    HoldOptions options = HoldOptions.builder().ttl(Duration.ofSeconds(5)).waitTimeout(Duration.ofSeconds(5)).build();
    Fence first;
    try (Lease lease = client.hold(name, options)) {
      first = lease.fence();
    }
    try (Lease lease = client.hold(name, options)) {
      assertTrue(Long.compareUnsigned(lease.fencingToken(), first.token()) > 0);
      return new Fence[] {first, lease.fence()};
    }
  }

  private static String refusal(Fence stale, Fence newest) {
    return FenceCheck.refusalMessage(stale, newest.token());
  }

  /** A resource that records each write's text; guarded or not. */
  private static Server grpcResource(List<String> writes, boolean guarded) throws IOException {
    ServerServiceDefinition resource = ServerServiceDefinition.builder("holdfast.test.Resource")
        .addMethod(WRITE, ServerCalls.asyncUnaryCall((String request, StreamObserver<String> reply) -> {
          Fence fence = FenceServerInterceptor.FENCE.get();
          writes.add(request + (fence == null ? "" : " under " + fence.tokenText()));
          reply.onNext("ok");
          reply.onCompleted();
        })).build();
    return NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
        .addService(guarded ? ServerInterceptors.intercept(resource, new FenceServerInterceptor(new MemoryFenceStore())) : resource)
        .build().start();
  }

  private static String call(Channel channel, ClientInterceptor fence, String text) {
    Channel fenced = fence == null ? channel : ClientInterceptors.intercept(channel, fence);
    return ClientCalls.blockingUnaryCall(fenced, WRITE, CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS), text);
  }

  @Test
  void grpcGuardRefusesTheStaleHolderAndAcceptsTheNewest() throws Exception {
    String name = Support.randomName() + "/orders";
    HoldOptions options = HoldOptions.builder().ttl(Duration.ofSeconds(5)).waitTimeout(Duration.ofSeconds(5)).build();
    List<String> writes = new CopyOnWriteArrayList<>();
    Server server = grpcResource(writes, true);
    ManagedChannel channel = ManagedChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();
    try {
      ClientInterceptor staleFence;
      Fence stale;
      try (Lease lease = client.hold(name, options)) {
        staleFence = lease.fenceInterceptor();
        stale = lease.fence();
        assertEquals("ok", call(channel, staleFence, "first"));
      }
      try (Lease lease = client.hold(name, options)) {
        assertEquals("ok", call(channel, lease.fenceInterceptor(), "second"));
        StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () -> call(channel, staleFence, "late"));
        assertEquals(Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode());
        assertEquals(refusal(stale, lease.fence()), refused.getStatus().getDescription());
        assertEquals("ok", call(channel, lease.fenceInterceptor(), "again")); // the same token: the holder writing again
        assertEquals(List.of("first under " + stale.tokenText(), "second under " + lease.fence().tokenText(),
            "again under " + lease.fence().tokenText()), writes);
      }

      StatusRuntimeException missing = assertThrows(StatusRuntimeException.class, () -> call(channel, null, "bare"));
      assertEquals(Status.Code.INVALID_ARGUMENT, missing.getStatus().getCode());
      assertTrue(missing.getStatus().getDescription().contains("holdfast-fence-token"), missing.getStatus().getDescription());
      Metadata badLockHeaders = new Metadata();
      badLockHeaders.put(Metadata.Key.of("holdfast-fence-lock", Metadata.ASCII_STRING_MARSHALLER), "a%zz");
      badLockHeaders.put(Metadata.Key.of("holdfast-fence-token", Metadata.ASCII_STRING_MARSHALLER), "5");
      ClientInterceptor badLock = MetadataUtils.newAttachHeadersInterceptor(badLockHeaders);
      StatusRuntimeException malformed = assertThrows(StatusRuntimeException.class, () -> call(channel, badLock, "bad"));
      assertEquals(Status.Code.INVALID_ARGUMENT, malformed.getStatus().getCode());
      assertTrue(malformed.getStatus().getDescription().contains("holdfast-fence-lock"), malformed.getStatus().getDescription());
      assertEquals(3, writes.size(), "refused calls never reach the resource");
    } finally {
      channel.shutdownNow();
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** Negative control: the same resource without the interceptor takes the stale holder's write. */
  @Test
  void withoutTheGrpcGuardTheStaleWriteLands() throws Exception {
    Fence[] fences = staleAndNewest(Support.randomName());
    List<String> writes = new CopyOnWriteArrayList<>();
    Server server = grpcResource(writes, false);
    ManagedChannel channel = ManagedChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();
    try {
      call(channel, MetadataUtils.newAttachHeadersInterceptor(
          FenceAttach.metadata(fences[1], new Metadata())), "newest");
      assertEquals("ok", call(channel, FenceAttach.interceptor(fences[0]), "stale"));
      assertEquals(List.of("newest", "stale"), writes);
    } finally {
      channel.shutdownNow();
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static HttpServer httpResource(List<String> writes, boolean guarded) throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    HttpContext context = server.createContext("/orders", exchange -> {
      Fence fence = (Fence) exchange.getAttribute(FenceFilter.ATTRIBUTE);
      writes.add(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8)
          + (fence == null ? "" : " under " + fence.tokenText()));
      exchange.sendResponseHeaders(204, -1);
      exchange.close();
    });
    if (guarded) {
      context.getFilters().add(new FenceFilter(new MemoryFenceStore()));
    }
    server.start();
    return server;
  }

  private static HttpResponse<String> post(HttpServer server, Map<String, String> headers, String body) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/orders")).timeout(Duration.ofSeconds(10))
        .POST(HttpRequest.BodyPublishers.ofString(body));
    headers.forEach(request::header);
    return HttpClient.newHttpClient().send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void httpFilterRefusesTheStaleHolderAndAcceptsTheNewest() throws Exception {
    String name = Support.randomName() + "/a b/é";
    HoldOptions options = HoldOptions.builder().ttl(Duration.ofSeconds(5)).waitTimeout(Duration.ofSeconds(5)).build();
    List<String> writes = new CopyOnWriteArrayList<>();
    HttpServer server = httpResource(writes, true);
    try {
      Map<String, String> staleHeaders;
      Fence stale;
      try (Lease lease = client.hold(name, options)) {
        staleHeaders = lease.fenceHeaders(new HashMap<>());
        stale = lease.fence();
        assertEquals(204, post(server, staleHeaders, "first").statusCode());
      }
      try (Lease lease = client.hold(name, options)) {
        Map<String, String> headers = lease.fenceHeaders(new HashMap<>());
        assertEquals(204, post(server, headers, "second").statusCode());
        HttpResponse<String> refused = post(server, staleHeaders, "late");
        assertEquals(409, refused.statusCode());
        JsonObject body = JsonParser.parseString(refused.body()).getAsJsonObject();
        assertEquals("stale_fencing_token", body.get("error").getAsString());
        assertEquals(name, body.get("lock").getAsString());
        assertEquals(stale.tokenText(), body.get("token").getAsString());
        assertEquals(lease.fence().tokenText(), body.get("newest").getAsString());
        assertEquals(refusal(stale, lease.fence()), body.get("message").getAsString());
        assertEquals(204, post(server, headers, "again").statusCode());
        assertEquals(List.of("first under " + stale.tokenText(), "second under " + lease.fence().tokenText(),
            "again under " + lease.fence().tokenText()), writes);
      }

      HttpResponse<String> missing = post(server, Map.of(), "bare");
      assertEquals(400, missing.statusCode());
      JsonObject missingBody = JsonParser.parseString(missing.body()).getAsJsonObject();
      assertEquals("missing_fence", missingBody.get("error").getAsString());
      assertEquals("token", missingBody.get("field").getAsString());
      assertEquals("Holdfast-Fence-Token", missingBody.get("header").getAsString());
      HttpResponse<String> malformed = post(server, Map.of("Holdfast-Fence-Lock", "a", "Holdfast-Fence-Token", "01"), "bad");
      assertEquals(400, malformed.statusCode());
      JsonObject malformedBody = JsonParser.parseString(malformed.body()).getAsJsonObject();
      assertEquals("malformed_fence", malformedBody.get("error").getAsString());
      assertEquals("Holdfast-Fence-Token", malformedBody.get("header").getAsString());
      assertEquals(3, writes.size(), "refused requests never reach the handler");
    } finally {
      server.stop(0);
    }
  }

  /** Negative control: without the filter the stale holder's request is handled. */
  @Test
  void withoutTheHttpFilterTheStaleWriteLands() throws Exception {
    Fence[] fences = staleAndNewest(Support.randomName());
    List<String> writes = new CopyOnWriteArrayList<>();
    HttpServer server = httpResource(writes, false);
    try {
      post(server, FenceAttach.headers(fences[1], new HashMap<>()), "newest");
      assertEquals(204, post(server, FenceAttach.headers(fences[0], new HashMap<>()), "stale").statusCode());
      assertEquals(List.of("newest", "stale"), writes);
    } finally {
      server.stop(0);
    }
  }

}
