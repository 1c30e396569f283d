package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonParser;
import holdfast.fencing.Fence;
import holdfast.fencing.FenceFilter;
import holdfast.fencing.FenceGuard;
import holdfast.fencing.FenceKeyRing;
import holdfast.fencing.FenceStore;
import holdfast.fencing.MemoryFenceStore;
import holdfast.v1.Lock.AcquireResponse;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * End to end with a holdfast server that signs fences (clients/test-clients.sh exports
 * HOLDFAST_SIGNED_ADDR, HOLDFAST_FENCE_KEYS_URL and HOLDFAST_FENCE_KEYS_FILE for it): the ring fetched
 * from the server's /fence-keys, real grants' signed fences through the guard on each store.
 */
@EnabledIfEnvironmentVariable(named = "HOLDFAST_SIGNED_ADDR", matches = ".+")
class SignedFenceLiveTest {
  private static ManagedChannel channel;
  private static HoldfastClient client;
  private static FenceKeyRing ring;
  private static FenceBackends backends;

  @BeforeAll
  static void start() throws Exception {
    channel = Support.readyChannel(System.getenv("HOLDFAST_SIGNED_ADDR"));
    client = new HoldfastClient(channel);
    ring = FenceKeyRing.fromUrl(URI.create(System.getenv("HOLDFAST_FENCE_KEYS_URL")));
    backends = FenceBackends.start();
  }

  @AfterAll
  static void stop() throws Exception {
    client.close();
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    backends.close();
  }

  private static HoldOptions ttl(Duration ttl) {
    return HoldOptions.builder().ttl(ttl).waitTimeout(Duration.ofSeconds(10)).build();
  }

  @Test
  void theRingFromTheUrlIsTheServersAndTheFilesToo() throws Exception {
    assertFalse(ring.keyIds().isEmpty());
    String file = System.getenv("HOLDFAST_FENCE_KEYS_FILE");
    if (file != null && !file.isEmpty()) {
      assertEquals(new ArrayList<>(ring.keyIds()), new ArrayList<>(FenceKeyRing.fromFile(Path.of(file)).keyIds()));
    }
    String served = new String(java.net.http.HttpClient.newHttpClient().send(
        java.net.http.HttpRequest.newBuilder(URI.create(System.getenv("HOLDFAST_FENCE_KEYS_URL"))).build(),
        HttpResponse.BodyHandlers.ofString()).body());
    assertTrue(JsonParser.parseString(served).getAsJsonObject().getAsJsonArray("keys").size() >= 1);
  }

  /**
   * Kleppmann's scenario with real signed grants, on each store: A holds and writes, loses the lock
   * (its lease given back while it still has its fence, as a paused holder would find it), B holds and
   * writes, A's late write is refused and B's update stays.
   */
  @Test
  void kleppmannWithRealSignedGrantsOnEveryStore() throws Exception {
    for (Map.Entry<String, FenceStore> store : backends.stores().entrySet()) {
      String lock = Support.randomName() + "/doc";
      try (SignedFenceGuardTest.Resource resource = new SignedFenceGuardTest.Resource(
          new FenceFilter(FenceGuard.builder(store.getValue()).keys(ring).build()).lock(lock))) {
        Fence a;
        try (Lease lease = client.hold(lock, ttl(Duration.ofSeconds(10)))) {
          a = lease.fence();
          assertTrue(a.signed(), "the server signs: " + a);
          assertTrue(a.leaseEndMs().isPresent());
          assertEquals(List.of("default", lock, lease.fencingToken()), List.of(a.namespace(), a.lock(), a.token()));
          assertEquals(204, resource.put(a, "a-1").statusCode(), store.getKey());
        }
        try (Lease lease = client.hold(lock, ttl(Duration.ofSeconds(10)))) {
          assertEquals(204, resource.put(lease.fence(), "b-1").statusCode(), store.getKey());
          HttpResponse<String> late = resource.put(a, "a-2");
          assertEquals(409, late.statusCode(), store.getKey() + ": " + late.body());
          assertEquals("b-1", resource.document.get(), store.getKey() + ": B's update was lost");
          assertEquals(204, resource.put(lease.fence(), "b-2").statusCode(), store.getKey());
        }
      }
    }
  }

  @Test
  void aHoldsRenewalBringsAFreshSignedFence() throws Exception {
    String lock = Support.randomName();
    try (Lease lease = client.hold(lock, ttl(Duration.ofSeconds(2)))) {
      long granted = lease.fence().leaseEndMs().getAsLong();
      Support.waitUntil(() -> lease.fence().leaseEndMs().getAsLong() > granted, "a renewal's signed fence");
      Fence renewed = lease.fence();
      assertEquals(lease.fencingToken(), renewed.token());
      try (SignedFenceGuardTest.Resource resource = new SignedFenceGuardTest.Resource(new FenceFilter(
          FenceGuard.builder(new MemoryFenceStore()).keys(ring).leaseEndSkew(Duration.ofSeconds(1)).build()).lock(lock))) {
        assertEquals(204, resource.put(renewed, "renewed").statusCode());
      }
    }
  }

  @Test
  void acquireAndSessionGrantsCarrySignedFences() throws Exception {
    String acquired = Support.randomName();
    String kept = Support.randomName();
    AcquireResponse response = client.acquire(acquired, ttl(Duration.ofSeconds(10)));
    Fence fromAcquire = Fence.issued(acquired, response.getFencingToken(), response.getSignedFence());
    assertTrue(fromAcquire.signed() && fromAcquire.leaseEndMs().isPresent(), fromAcquire.toString());
    try (Session session = client.session(); Lease lease = session.hold(kept, ttl(Duration.ofSeconds(10)))) {
      Fence fromSession = lease.fence();
      assertTrue(fromSession.signed(), fromSession.toString());
      assertFalse(fromSession.leaseEndMs().isPresent(), "a session-kept lock's fence states no lease end");
      MemoryFenceStore store = new MemoryFenceStore();
      try (SignedFenceGuardTest.Resource one = new SignedFenceGuardTest.Resource(
              new FenceFilter(FenceGuard.builder(store).keys(ring).build()).lock(acquired));
          SignedFenceGuardTest.Resource two = new SignedFenceGuardTest.Resource(
              new FenceFilter(FenceGuard.builder(store).keys(ring).build()).lock(kept))) {
        assertEquals(204, one.put(fromAcquire, "acquired").statusCode());
        assertEquals(204, two.put(fromSession, "session").statusCode());
        assertEquals(403, two.put(fromAcquire, "another lock").statusCode());
      }
    } finally {
      client.release(acquired, response.getToken());
    }
  }

  /** A short lease not renewed: past its end (and the skew), the check refuses; off, it admits. */
  @Test
  void theLeaseEndCheckRefusesAnEndedRealGrant() throws Exception {
    String lock = Support.randomName();
    AcquireResponse response = client.acquire(lock, ttl(Duration.ofSeconds(1)));
    Fence fence = Fence.issued(lock, response.getFencingToken(), response.getSignedFence());
    long end = fence.leaseEndMs().getAsLong();
    Support.waitUntil(() -> System.currentTimeMillis() > end + 200, "the lease's end plus the skew");
    try (SignedFenceGuardTest.Resource on = new SignedFenceGuardTest.Resource(new FenceFilter(
            FenceGuard.builder(new MemoryFenceStore()).keys(ring).leaseEndSkew(Duration.ofMillis(200)).build()).lock(lock));
        SignedFenceGuardTest.Resource off = new SignedFenceGuardTest.Resource(new FenceFilter(
            FenceGuard.builder(new MemoryFenceStore()).keys(ring).build()).lock(lock))) {
      assertEquals(409, on.put(fence, "late").statusCode());
      assertEquals(204, off.put(fence, "late").statusCode());
    }
  }
}
