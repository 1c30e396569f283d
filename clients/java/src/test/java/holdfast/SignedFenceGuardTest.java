package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.sun.net.httpserver.HttpServer;
import holdfast.fencing.Fence;
import holdfast.fencing.FenceAttach;
import holdfast.fencing.FenceCheck;
import holdfast.fencing.FenceFilter;
import holdfast.fencing.FenceGuard;
import holdfast.fencing.FenceKeyRing;
import holdfast.fencing.FenceServerInterceptor;
import holdfast.fencing.FenceServletFilter;
import holdfast.fencing.FenceStore;
import holdfast.fencing.FenceStoreException;
import holdfast.fencing.MemoryFenceStore;
import holdfast.fencing.PostgresFenceStore;
import holdfast.fencing.RedisFenceStore;
import io.grpc.CallOptions;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
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
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.tomcat.util.descriptor.web.FilterDef;
import org.apache.tomcat.util.descriptor.web.FilterMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The guards with signed fences, in front of a real JDK HttpServer and a real grpc-java server, on each
 * store (memory, a real redis-server, a real PostgreSQL): every refusal decided before the store (the
 * store's calls counted through a wrapper of the real store), Kleppmann's scenario, rotation, the
 * lease-end check, and the store's backend stopped and killed by PID.
 */
class SignedFenceGuardTest {
  private static final long FAR = System.currentTimeMillis() + Duration.ofDays(1).toMillis();
  private static FenceBackends backends;
  private static FenceSigner first;
  private static FenceSigner second;
  private static FenceSigner outsider;
  private static FenceKeyRing ring;

  @BeforeAll
  static void start() throws Exception {
    backends = FenceBackends.start();
    first = FenceSigner.of(FenceSigner.FIRST);
    second = FenceSigner.of(FenceSigner.SECOND);
    outsider = FenceSigner.of(FenceSigner.OUTSIDER);
    ring = FenceSigner.ring(FenceSigner.FIRST, FenceSigner.SECOND);
  }

  @AfterAll
  static void stop() throws Exception {
    backends.close();
  }

  /** A real store, its checks counted: a refusal decided before the store leaves the count unchanged. */
  static final class Counting implements FenceStore {
    final FenceStore real;
    final AtomicInteger calls = new AtomicInteger();

    Counting(FenceStore real) {
      this.real = real;
    }

    @Override
    public FenceCheck check(String lock, long token) throws FenceStoreException {
      calls.incrementAndGet();
      return real.check(lock, token);
    }
  }

  private static Map<String, FenceStore> stores() throws Exception {
    return backends.stores();
  }

  /**
   * An HTTP resource at /doc, behind a guard or not: the JDK's HttpServer with {@link FenceFilter}, or
   * a real servlet container (embedded Tomcat) with {@link FenceServletFilter}. Each write replaces the
   * document; the handler notes {@link Fence#current()}.
   */
  static final class Resource implements AutoCloseable {
    final AtomicReference<String> document = new AtomicReference<>("");
    final List<Fence> admitted = new CopyOnWriteArrayList<>();
    private final int port;
    private final AutoCloseable server;

    /** The JDK's HttpServer, behind {@code filter} (null: unguarded). */
    Resource(FenceFilter filter) throws IOException {
      HttpServer http = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      var context = http.createContext("/doc", exchange -> {
        write(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
        exchange.sendResponseHeaders(204, -1);
        exchange.close();
      });
      if (filter != null) {
        context.getFilters().add(filter);
      }
      http.start();
      port = http.getAddress().getPort();
      server = () -> http.stop(0);
    }

    /** Embedded Tomcat, behind {@code filter}. */
    Resource(FenceServletFilter filter) throws Exception {
      Path base = Files.createTempDirectory("holdfast-java-tomcat");
      Tomcat tomcat = new Tomcat();
      tomcat.setBaseDir(base.toString());
      Connector connector = new Connector();
      connector.setPort(0);
      connector.setProperty("address", "127.0.0.1");
      tomcat.setConnector(connector);
      Context context = tomcat.addContext("", null);
      Tomcat.addServlet(context, "doc", new HttpServlet() {
        private static final long serialVersionUID = 1L;

        @Override
        protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
          write(new String(request.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
          response.setStatus(204);
        }
      });
      context.addServletMappingDecoded("/doc", "doc");
      FilterDef def = new FilterDef();
      def.setFilterName("fence");
      def.setFilter(filter);
      context.addFilterDef(def);
      FilterMap map = new FilterMap();
      map.setFilterName("fence");
      map.addURLPattern("/*");
      context.addFilterMap(map);
      tomcat.start();
      port = connector.getLocalPort();
      server = () -> {
        tomcat.stop();
        tomcat.destroy();
        Support.deleteTree(base);
      };
    }

    private void write(String body) {
      Fence fence = Fence.current();
      if (fence != null) {
        admitted.add(fence);
      }
      document.set(body);
    }

    HttpResponse<String> send(String method, List<String[]> headers, String body) throws Exception {
      HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/doc"))
          .timeout(Duration.ofSeconds(30)).method(method, HttpRequest.BodyPublishers.ofString(body));
      for (String[] header : headers) {
        request.header(header[0], header[1]);
      }
      return HttpClient.newHttpClient().send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> put(Fence fence, String body) throws Exception {
      List<String[]> headers = new ArrayList<>();
      FenceAttach.headers(fence, new LinkedHashMap<>()).forEach((name, value) -> headers.add(new String[] {name, value}));
      return send("PUT", headers, body);
    }

    @Override
    public void close() throws Exception {
      server.close();
    }
  }

  private static List<String[]> headers(String... pairs) {
    List<String[]> list = new ArrayList<>();
    for (int i = 0; i < pairs.length; i += 2) {
      list.add(new String[] {pairs[i], pairs[i + 1]});
    }
    return list;
  }

  private static JsonObject body(HttpResponse<String> response) {
    assertEquals("application/json", response.headers().firstValue("content-type").orElse(""));
    return JsonParser.parseString(response.body()).getAsJsonObject();
  }

  /** One request the guard must refuse, with the status and error it must answer. */
  private static final class Refused {
    final String name;
    final List<String[]> headers;
    final int status;
    final String error;

    Refused(String name, List<String[]> headers, int status, String error) {
      this.name = name;
      this.headers = headers;
      this.status = status;
      this.error = error;
    }
  }

  /** Forged, misdirected, unknown-key, truncated, altered and doubled fences for lock {@code lock}. */
  private static List<Refused> refusals(String lock) throws Exception {
    String good = first.sign(lock, 7, FAR);
    String[] parts = good.split(":");
    String forged = String.join(":", parts[0], parts[1], parts[2], parts[3], "18446744073709551615", parts[5], parts[6]);
    String alteredEnd = String.join(":", parts[0], parts[1], parts[2], parts[3], parts[4], Long.toString(FAR + 1), parts[6]);
    String encoded = parts[3];
    return List.of(
        new Refused("forged token in the signed fence", headers("Holdfast-Fence", forged), 403, "bad_fence_signature"),
        new Refused("forged token, unsigned", headers("Holdfast-Fence-Lock", encoded, "Holdfast-Fence-Token", "18446744073709551615"),
            403, "signed_fence_required"),
        new Refused("another lock", headers("Holdfast-Fence", first.sign(lock + "-other", 9, FAR)), 403, "fence_for_another_lock"),
        new Refused("another namespace", headers("Holdfast-Fence", first.sign("team-a", lock, 9, FAR)), 403,
            "fence_for_another_namespace"),
        new Refused("unknown key", headers("Holdfast-Fence", outsider.sign(lock, 9, FAR)), 403, "unknown_fence_key"),
        new Refused("truncated", headers("Holdfast-Fence", good.substring(0, good.length() - 1)), 400, "malformed_fence"),
        new Refused("altered lease end", headers("Holdfast-Fence", alteredEnd), 403, "bad_fence_signature"),
        new Refused("signed fence twice", headers("Holdfast-Fence", good, "Holdfast-Fence", good), 400, "malformed_fence"),
        new Refused("unsigned token twice", headers("Holdfast-Fence", good, "Holdfast-Fence-Lock", encoded,
            "Holdfast-Fence-Token", "7", "Holdfast-Fence-Token", "7"), 400, "malformed_fence"),
        new Refused("unsigned token disagrees", headers("Holdfast-Fence", good, "Holdfast-Fence-Lock", encoded,
            "Holdfast-Fence-Token", "8"), 400, "malformed_fence"),
        new Refused("no fence", headers(), 400, "missing_fence"));
  }

  @Test
  void everyRefusalIsDecidedBeforeTheStoreOverHttp() throws Exception {
    for (Map.Entry<String, FenceStore> store : stores().entrySet()) {
      String lock = Support.randomName() + "/a b:é";
      Counting counting = new Counting(store.getValue());
      try (Resource resource = new Resource(new FenceFilter(FenceGuard.builder(counting).keys(ring).build()).lock(lock))) {
        refusesBeforeTheStore(resource, counting, lock, store.getKey() + " (HttpServer)");
      }
    }
  }

  @Test
  void everyRefusalIsDecidedBeforeTheStoreInAServletContainer() throws Exception {
    for (Map.Entry<String, FenceStore> store : stores().entrySet()) {
      String lock = Support.randomName() + "/a b:é";
      Counting counting = new Counting(store.getValue());
      try (Resource resource = new Resource(new FenceServletFilter(FenceGuard.builder(counting).keys(ring).build()).lock(lock))) {
        refusesBeforeTheStore(resource, counting, lock, store.getKey() + " (Tomcat)");
      }
    }
  }

  private static void refusesBeforeTheStore(Resource resource, Counting counting, String lock, String where) throws Exception {
    for (Refused refused : refusals(lock)) {
      String what = where + ": " + refused.name;
      for (String method : List.of("PUT", "GET")) { // every method is guarded by default
        HttpResponse<String> response = resource.send(method, refused.headers, "forged");
        assertEquals(refused.status, response.statusCode(), what + " " + method + ": " + response.body());
        JsonObject body = body(response);
        assertEquals(refused.error, body.get("error").getAsString(), what);
        assertFalse(body.get("message").getAsString().isEmpty(), what);
        for (String[] header : refused.headers) {
          if (header[0].equals("Holdfast-Fence")) {
            String signature = header[1].substring(header[1].lastIndexOf(':') + 1);
            assertFalse(response.body().contains(signature), what + ": the body repeats the signature");
          }
        }
      }
      assertEquals(0, counting.calls.get(), what + ": the store was asked");
    }
    assertEquals("", resource.document.get(), where + ": a refused request reached the handler");
    String good = first.sign(lock, 7, FAR);
    assertEquals(204, resource.put(Fence.issued(lock, 7, good), "ok").statusCode(), where);
    assertEquals(1, counting.calls.get(), where);
    Fence seen = resource.admitted.get(0);
    assertEquals(List.of("default", lock, "7", FAR, FenceSigner.FIRST, true),
        List.of(seen.namespace(), seen.lock(), seen.tokenText(), seen.leaseEndMs().getAsLong(), seen.keyId(), seen.signed()),
        where + ": Fence.current() in the handler");
  }

  private static final io.grpc.MethodDescriptor<String, String> WRITE = FenceGuardTest.WRITE;

  @Test
  void everyRefusalIsDecidedBeforeTheStoreOverGrpc() throws Exception {
    for (Map.Entry<String, FenceStore> store : stores().entrySet()) {
      String lock = Support.randomName() + "/a b:é";
      Counting counting = new Counting(store.getValue());
      List<String> writes = new CopyOnWriteArrayList<>();
      List<Fence> admitted = new CopyOnWriteArrayList<>();
      ServerServiceDefinition resource = ServerServiceDefinition.builder("holdfast.test.Resource")
          .addMethod(WRITE, ServerCalls.asyncUnaryCall((String request, StreamObserver<String> reply) -> {
            admitted.add(Fence.current());
            writes.add(request);
            reply.onNext("ok");
            reply.onCompleted();
          })).build();
      Server server = NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
          .addService(ServerInterceptors.intercept(resource,
              new FenceServerInterceptor(FenceGuard.builder(counting).keys(ring).build()).lock(lock)))
          .build().start();
      ManagedChannel channel = ManagedChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();
      try {
        for (Refused refused : refusals(lock)) {
          String what = store.getKey() + ": " + refused.name;
          Metadata metadata = new Metadata();
          for (String[] header : refused.headers) {
            metadata.put(Metadata.Key.of(header[0].toLowerCase(java.util.Locale.ROOT), Metadata.ASCII_STRING_MARSHALLER), header[1]);
          }
          StatusRuntimeException error = org.junit.jupiter.api.Assertions.assertThrows(StatusRuntimeException.class,
              () -> ClientCalls.blockingUnaryCall(ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(metadata)),
                  WRITE, CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS), "forged"), what);
          Status.Code want = refused.status == 400 ? Status.Code.INVALID_ARGUMENT : Status.Code.PERMISSION_DENIED;
          assertEquals(want, error.getStatus().getCode(), what + ": " + error.getStatus());
          assertEquals(0, counting.calls.get(), what + ": the store was asked");
        }
        assertEquals(List.of(), writes, store.getKey());
        Fence issued = Fence.issued(lock, 7, first.sign(lock, 7, null));
        assertEquals("ok", ClientCalls.blockingUnaryCall(ClientInterceptors.intercept(channel, FenceAttach.interceptor(issued)),
            WRITE, CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS), "signed"));
        assertEquals(1, counting.calls.get(), store.getKey());
        Fence seen = admitted.get(0);
        assertEquals(List.of("default", lock, "7", false, FenceSigner.FIRST, true),
            List.of(seen.namespace(), seen.lock(), seen.tokenText(), seen.leaseEndMs().isPresent(), seen.keyId(), seen.signed()),
            store.getKey() + ": Fence.current() in the handler");
      } finally {
        channel.shutdownNow();
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  /**
   * Kleppmann's scenario with signed fences on each store: A (token a) writes, is paused, B (token b > a)
   * writes, A wakes and writes with its old fence: refused 409, the document keeps B's write.
   */
  @Test
  void kleppmannWithSignedFencesOnEveryStore() throws Exception {
    for (Map.Entry<String, FenceStore> store : stores().entrySet()) {
      String lock = Support.randomName() + "/doc";
      Fence a = Fence.issued(lock, 41, first.sign(lock, 41, FAR));
      Fence b = Fence.issued(lock, 42, first.sign(lock, 42, FAR));
      try (Resource resource = new Resource(new FenceFilter(FenceGuard.builder(store.getValue()).keys(ring).build()).lock(lock))) {
        assertEquals(204, resource.put(a, "a-1").statusCode(), store.getKey());
        assertEquals(204, resource.put(b, "b-1").statusCode(), store.getKey());
        HttpResponse<String> late = resource.put(a, "a-2");
        assertEquals(409, late.statusCode(), store.getKey());
        JsonObject body = body(late);
        assertEquals("stale_fencing_token", body.get("error").getAsString());
        assertEquals(List.of(lock, "41", "42"), List.of(body.get("lock").getAsString(), body.get("token").getAsString(),
            body.get("newest").getAsString()));
        assertEquals("b-1", resource.document.get(), store.getKey() + ": B's update was lost");
        assertEquals(204, resource.put(b, "b-2").statusCode(), store.getKey());
        assertEquals("b-2", resource.document.get());
      }
    }
  }

  /** Negative control of the scenario: without the guard A's late write lands over B's. */
  @Test
  void withoutTheGuardThePausedHolderOverwrites() throws Exception {
    String lock = Support.randomName() + "/doc";
    try (Resource resource = new Resource((FenceFilter) null)) {
      resource.put(Fence.issued(lock, 41, first.sign(lock, 41, FAR)), "a-1");
      resource.put(Fence.issued(lock, 42, first.sign(lock, 42, FAR)), "b-1");
      assertEquals(204, resource.put(Fence.issued(lock, 41, first.sign(lock, 41, FAR)), "a-2").statusCode());
      assertEquals("a-2", resource.document.get());
    }
  }

  @Test
  void rotationAcceptsTheOldKeyOnlyWhileItIsInTheRing() throws Exception {
    String lock = Support.randomName();
    MemoryFenceStore store = new MemoryFenceStore();
    try (Resource both = new Resource(new FenceFilter(FenceGuard.builder(store).keys(ring).build()).lock(lock));
        Resource rotated = new Resource(new FenceFilter(
            FenceGuard.builder(store).keys(FenceSigner.ring(FenceSigner.SECOND)).build()).lock(lock))) {
      Fence old = Fence.issued(lock, 5, first.sign(lock, 5, FAR));
      assertEquals(204, both.put(old, "old key").statusCode());
      HttpResponse<String> refused = rotated.put(old, "old key after rotation");
      assertEquals(403, refused.statusCode());
      assertEquals("unknown_fence_key", body(refused).get("error").getAsString());
      assertEquals(FenceSigner.FIRST, body(refused).get("key_id").getAsString());
      assertEquals(204, rotated.put(Fence.issued(lock, 6, second.sign(lock, 6, FAR)), "new key").statusCode());
    }
  }

  @Test
  void theLeaseEndCheckRefusesAnEndedLeaseOnlyWhenTurnedOn() throws Exception {
    String lock = Support.randomName();
    long ended = System.currentTimeMillis() - Duration.ofMinutes(1).toMillis();
    Fence late = Fence.issued(lock, 3, first.sign(lock, 3, ended));
    try (Resource on = new Resource(new FenceFilter(FenceGuard.builder(new MemoryFenceStore()).keys(ring)
            .leaseEndSkew(Duration.ofSeconds(1)).build()).lock(lock));
        Resource off = new Resource(new FenceFilter(FenceGuard.builder(new MemoryFenceStore()).keys(ring).build()).lock(lock))) {
      HttpResponse<String> refused = on.put(late, "after the lease");
      assertEquals(409, refused.statusCode());
      JsonObject body = body(refused);
      assertEquals("fence_lease_ended", body.get("error").getAsString());
      assertEquals(List.of(lock, "3", Long.toString(ended), "1000"), List.of(body.get("lock").getAsString(),
          body.get("token").getAsString(), body.get("lease_end_ms").getAsString(), body.get("skew_ms").getAsString()));
      assertTrue(Long.parseLong(body.get("now_ms").getAsString()) > ended);
      assertEquals("", on.document.get());
      assertEquals(204, on.put(Fence.issued(lock, 4, first.sign(lock, 4, FAR)), "within the lease").statusCode());
      assertEquals(204, on.put(Fence.issued(lock, 5, first.sign(lock, 5, null)), "no end stated").statusCode());
      // Negative control: with the check off (the default) the same fence is admitted.
      assertEquals(204, off.put(late, "after the lease").statusCode());
    }
  }

  @Test
  void unsignedFencesWhereTheGuardAcceptsThemStillBindTheLock() throws Exception {
    String lock = Support.randomName();
    try (Resource resource = new Resource(new FenceFilter(FenceGuard.builder(new MemoryFenceStore()).keys(ring)
        .acceptUnsigned(true).build()).lock(lock))) {
      assertEquals(204, resource.put(new Fence(lock, 2), "unsigned").statusCode());
      Fence seen = resource.admitted.get(0);
      assertEquals(List.of("", "", false), List.of(seen.namespace(), seen.keyId(), seen.signed()));
      HttpResponse<String> other = resource.put(new Fence(lock + "-other", 3), "unsigned, another lock");
      assertEquals(403, other.statusCode());
      assertEquals("fence_for_another_lock", body(other).get("error").getAsString());
      assertEquals(204, resource.put(Fence.issued(lock, 4, first.sign(lock, 4, FAR)), "signed").statusCode());
    }
    assertNull(Fence.current(), "no fence outside a guarded handler");
  }

  /**
   * The store's backend stops answering (SIGSTOP), then dies (SIGKILL), by PID: the guard answers 503
   * fence_store_unavailable within the store's bound (1 s), well under a generous ceiling.
   */
  @Test
  void aStoppedOrKilledRedisIsUnavailableWithinTheBound() throws Exception {
    Path dir = Files.createTempDirectory("holdfast-java-redis-killed");
    Support.RedisServer own = Support.RedisServer.start("--save", "", "--appendonly", "yes", "--appendfsync", "always",
        "--dir", dir.toString());
    try (RespFenceRedis client = new RespFenceRedis(own.port)) {
      assertUnavailableWithinTheBound(RedisFenceStore.open(client, RedisFenceStore.Options.defaults()), own.pid());
    } finally {
      own.close();
      Support.deleteTree(dir);
    }
  }

  @Test
  void aStoppedOrKilledPostgresIsUnavailableWithinTheBound() throws Exception {
    PostgresServer own = PostgresServer.start();
    try {
      assertUnavailableWithinTheBound(PostgresFenceStore.open(own::connect), own.pid);
    } finally {
      own.close(); // continues and stops it if alive, and removes its directory
    }
  }

  private static void assertUnavailableWithinTheBound(FenceStore store, long pid) throws Exception {
    String lock = Support.randomName();
    try (Resource resource = new Resource(new FenceFilter(FenceGuard.builder(store).keys(ring).build()).lock(lock))) {
      assertEquals(204, resource.put(Fence.issued(lock, 1, first.sign(lock, 1, FAR)), "up").statusCode());
      Support.signal("STOP", pid);
      try {
        assertUnavailable(resource, lock, 2, "stopped");
      } finally {
        Support.signal("KILL", pid);
      }
      assertUnavailable(resource, lock, 3, "killed");
    }
  }

  private static void assertUnavailable(Resource resource, String lock, long token, String what) throws Exception {
    long started = System.nanoTime();
    HttpResponse<String> response = resource.put(Fence.issued(lock, token, first.sign(lock, token, FAR)), what);
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    assertEquals(503, response.statusCode(), what + ": " + response.body());
    JsonObject body = body(response);
    assertEquals("fence_store_unavailable", body.get("error").getAsString());
    assertEquals(lock, body.get("lock").getAsString());
    assertTrue(body.get("message").getAsString().startsWith("fence store unavailable for lock \"" + lock + "\": "),
        body.get("message").getAsString());
    assertTrue(ms < 3000, what + ": the guard took " + ms + " ms with a 1 s bound");
    assertEquals("up", resource.document.get());
  }

  /** A guard that cannot tell the resource's lock fails closed: 500 fence_guard_misconfigured, the store not asked. */
  @Test
  void aGuardWithoutTheResourcesLockRefuses() throws Exception {
    String lock = Support.randomName();
    Counting counting = new Counting(new MemoryFenceStore());
    Fence good = Fence.issued(lock, 2, first.sign(lock, 2, FAR));
    try (Resource noLock = new Resource(new FenceFilter(FenceGuard.builder(counting).keys(ring).build()));
        Resource ruleGivesNone = new Resource(new FenceFilter(FenceGuard.builder(counting).keys(ring).build())
            .lock(exchange -> exchange.getRequestURI().getPath().equals("/doc/known") ? lock : null))) {
      for (Resource resource : List.of(noLock, ruleGivesNone)) {
        HttpResponse<String> refused = resource.put(good, "write");
        assertEquals(500, refused.statusCode(), refused.body());
        assertEquals("fence_guard_misconfigured", body(refused).get("error").getAsString());
      }
      assertEquals(0, counting.calls.get());
    }
  }

  @Test
  void theHolderSendsTheSignedFenceAndTheUnsignedPair() throws Exception {
    String lock = Support.randomName() + "/a b";
    String signed = first.sign(lock, 12, FAR);
    Map<String, String> http = FenceAttach.headers(Fence.issued(lock, 12, signed), new HashMap<>());
    assertEquals(Map.of("Holdfast-Fence", signed, "Holdfast-Fence-Lock", holdfast.fencing.FenceWire.encodeLock(lock),
        "Holdfast-Fence-Token", "12"), http);
    Metadata metadata = FenceAttach.metadata(Fence.issued(lock, 12, signed), new Metadata());
    assertEquals(signed, metadata.get(Metadata.Key.of("holdfast-fence", Metadata.ASCII_STRING_MARSHALLER)));
    // An unsigned fence attached over a signed one takes its header away.
    assertFalse(FenceAttach.headers(new Fence(lock, 13), http).containsKey("Holdfast-Fence"));
    assertFalse(Fence.issued(lock, 12, signed).toString().contains(signed.substring(signed.lastIndexOf(':') + 1)),
        "toString shows the signature");
  }
}
