package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import holdfast.v1.Lock.AcquireResponse;
import holdfast.v1.Lock.Holder;
import holdfast.v1.Lock.LostReason;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The scenarios of the Python and Go clients' tests, against a live server. */
class LeaseTest {
  private static Support.Processes processes; // when HOLDFAST_ADDR names no running server
  private static String redisUrl;
  private static ManagedChannel channel;
  private static HoldfastClient client;

  @BeforeAll
  static void connect() throws Exception {
    String addr = System.getenv("HOLDFAST_ADDR");
    redisUrl = System.getenv("HOLDFAST_REDIS_URL");
    if (addr == null || redisUrl == null) {
      processes = new Support.Processes();
      addr = processes.addr;
      redisUrl = processes.redisUrl;
    }
    channel = Support.readyChannel(addr);
    client = new HoldfastClient(channel);
  }

  @AfterAll
  static void disconnect() throws Exception {
    client.close();
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    if (processes != null) {
      processes.close();
    }
  }

  private static HoldOptions options(long ttlMs, long waitMs) {
    return HoldOptions.builder().ttl(Duration.ofMillis(ttlMs)).waitTimeout(Duration.ofMillis(waitMs)).build();
  }

  private static List<Holder> holders(String name) {
    return client.inspect(name).getHoldersList();
  }

  @Test
  void holdAndRelease() throws Exception {
    String name = Support.randomName();
    Lease held;
    try (Lease lease = client.hold(name, HoldOptions.builder().ttl(Duration.ofSeconds(3)).owner("java-test").build())) {
      held = lease;
      assertFalse(lease.token().isEmpty());
      assertTrue(lease.fencingToken() > 0);
      assertFalse(lease.isLost());
      List<Holder> holders = holders(name);
      assertEquals(1, holders.size());
      assertEquals("java-test", holders.get(0).getOwner());
      assertEquals(lease.fencingToken(), holders.get(0).getFencingToken());
    }
    assertEquals(List.of(), holders(name));
    assertNull(held.lostException());
  }

  @Test
  void renewalsKeepTheLease() throws Exception {
    String name = Support.randomName();
    try (Lease lease = client.hold(name, options(300, 1000))) {
      long first = lease.deadlineNanos();
      Support.waitUntil(() -> lease.deadlineNanos() - first > TimeUnit.MILLISECONDS.toNanos(300), "two renewals");
      assertNull(lease.lostException());
      lease.check();
    }
  }

  @Test
  void secondHolderWaitsForTheFirst() throws Exception {
    String name = Support.randomName();
    AtomicBoolean released = new AtomicBoolean();
    CompletableFuture<Long> second = new CompletableFuture<>();
    Thread waiter = new Thread(() -> {
      try (Lease lease = client.hold(name, options(3000, Support.WAIT.toMillis()))) {
        if (!released.get()) {
          throw new AssertionError("granted before the first holder released");
        }
        second.complete(lease.fencingToken());
      } catch (Throwable e) {
        second.completeExceptionally(e);
      }
    });
    long firstToken;
    try (Lease first = client.hold(name, options(3000, 1000))) {
      firstToken = first.fencingToken();
      waiter.start();
      Support.waitUntil(() -> client.inspect(name).getWaiters() == 1, "the second caller to queue");
      assertFalse(second.isDone());
      released.set(true);
    }
    assertTrue(second.get(Support.WAIT.toMillis(), TimeUnit.MILLISECONDS) > firstToken);
    waiter.join();
  }

  @Test
  void notAcquiredInTime() throws Exception {
    String name = Support.randomName();
    try (Lease first = client.hold(name, options(3000, 0))) {
      long started = System.nanoTime();
      assertThrows(NotAcquiredException.class, () -> client.hold(name, options(0, 200)).close());
      assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(200));
      assertFalse(first.isLost());
    }
    assertEquals(List.of(), holders(name));
  }

  @Test
  void lostWhenTheGrantIsDeleted() throws Exception {
    String name = Support.randomName();
    try (Lease lease = client.hold(name, options(600, 1000))) {
      CompletableFuture<LeaseLostException> told = new CompletableFuture<>();
      lease.onLost(told::complete);
      String[] keys = Support.lockKeys(name);
      Support.redisCommand(redisUrl, "DEL", keys[0], keys[1], keys[2]);
      LeaseLostException lost = told.get(Support.WAIT.toMillis(), TimeUnit.MILLISECONDS);
      assertEquals(LostReason.LOST_REASON_EXPIRED, lost.code(), lost.reason());
      assertTrue(lease.isLost());
      assertThrows(LeaseLostException.class, lease::check);
      AtomicReference<LeaseLostException> late = new AtomicReference<>();
      lease.onLost(late::set); // registered after the loss: runs at once
      assertEquals(lost, late.get());
    }
  }

  @Test
  void leavingTheBlockByExceptionReleases() throws Exception {
    String name = Support.randomName();
    assertThrows(IllegalStateException.class, () -> {
      try (Lease lease = client.hold(name, options(3000, 1000))) {
        assertEquals(1, holders(name).size());
        throw new IllegalStateException("boom");
      }
    });
    assertEquals(List.of(), holders(name));
    try (Lease again = client.hold(name, HoldOptions.DEFAULT)) {
      assertTrue(again.fencingToken() > 0);
    }
  }

  @Test
  void oneShotAcquireAndRelease() throws Exception {
    String name = Support.randomName();
    AcquireResponse grant = client.acquire(name, options(3000, 0));
    assertThrows(NotAcquiredException.class, () -> client.acquire(name, options(3000, 0)));
    assertTrue(client.release(name, grant.getToken()));
    assertEquals(List.of(), holders(name));
  }

  @Test
  void badInputIsAStatusNamingTheField() {
    io.grpc.StatusRuntimeException refused = assertThrows(io.grpc.StatusRuntimeException.class,
        () -> client.hold("", HoldOptions.DEFAULT));
    assertEquals(io.grpc.Status.Code.INVALID_ARGUMENT, refused.getStatus().getCode());
    assertTrue(refused.getStatus().getDescription().contains("name"), refused.getStatus().getDescription());
  }

  /** A frozen server sends nothing, not even lost: the client's own deadline must fire. */
  @Test
  void lostAtTheLocalDeadlineWhenTheServerGoesSilent() throws Exception {
    try (Support.Processes own = new Support.Processes();
        HoldfastClient silent = HoldfastClient.connect(own.addr)) {
      String name = Support.randomName();
      CountDownLatch told = new CountDownLatch(1);
      try (Lease lease = silent.hold(name, options(500, 1000))) {
        lease.onLost(lost -> told.countDown());
        own.pause();
        try {
          assertTrue(told.await(Support.WAIT.toMillis(), TimeUnit.MILLISECONDS), "the lost callback did not run");
          LeaseLostException lost = lease.lostException();
          assertEquals(LostReason.LOST_REASON_UNSPECIFIED, lost.code());
          assertTrue(lost.reason().contains("local deadline"), lost.reason());
          // The local deadline is no later than the lease's end in Redis (both wall clocks of this machine).
          double deadlineMs = System.currentTimeMillis() + (lease.deadlineNanos() - System.nanoTime()) / 1e6;
          double expiryMs = Double.parseDouble(Support.redisCommand(own.redisUrl, "ZSCORE", Support.lockKeys(name)[0],
              lease.token()));
          assertTrue(deadlineMs <= expiryMs, deadlineMs + " > " + expiryMs);
        } finally {
          own.resume();
        }
      }
    }
  }
}
