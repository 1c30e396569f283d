package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Deadlocks against a live server with detection on (docs/deadlocks.md): two callers each hold one lock
 * and wait for the other's. The younger wait ends with {@link DeadlockException} naming the cycle, well
 * before its wait timeout; once that side gives back what it holds, the other is granted.
 */
class DeadlockTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  /** Generous on a busy 2-core machine, and still well short of the 20 s wait: detection answered it. */
  private static final Duration ANSWERED_WITHIN = Duration.ofSeconds(10);

  private static Support.Processes processes; // when HOLDFAST_ADDR names no running server
  private static HoldfastClient client;
  private static final ExecutorService waiters = Executors.newCachedThreadPool();

  @BeforeAll
  static void connect() throws Exception {
    String addr = System.getenv("HOLDFAST_ADDR");
    if (addr == null) {
      processes = new Support.Processes();
      addr = processes.addr;
    }
    Support.readyChannel(addr).shutdownNow();
    client = HoldfastClient.connect(addr);
  }

  @AfterAll
  static void disconnect() {
    waiters.shutdownNow();
    client.close();
    if (processes != null) {
      processes.close();
    }
  }

  private static HoldOptions as(String owner, Duration wait) {
    return HoldOptions.builder().owner(owner).ttl(Duration.ofSeconds(30)).waitTimeout(wait).build();
  }

  /** Blocks until {@code name} has a queued waiter, so that the next wait is the younger one. */
  private static void untilQueued(String name) throws InterruptedException {
    Support.waitUntil(() -> client.inspect(name).getWaiters() > 0, "a waiter queued on " + name);
  }

  /** The cycle in words names both locks and both owners. */
  private static void assertNamesTheCycle(DeadlockException e, String... parts) {
    assertTrue(e.getMessage().startsWith("deadlock: "), e.getMessage());
    for (String part : parts) {
      assertTrue(e.getMessage().contains("\"" + part + "\""), "the message names " + part + ": " + e.getMessage());
    }
  }

  @Test
  void holdEndedByADeadlockThenTheOtherIsGranted() throws Exception {
    String a = Support.randomName(), b = Support.randomName();
    String first = "first-" + Support.randomName(), second = "second-" + Support.randomName();
    try (Lease heldA = client.hold(a, as(first, Duration.ZERO)); Lease heldB = client.hold(b, as(second, Duration.ZERO))) {
      Future<Lease> firstWaits = waiters.submit(() -> client.hold(b, as(first, WAIT)));
      untilQueued(b);
      long started = System.nanoTime();
      DeadlockException e = assertThrows(DeadlockException.class, () -> client.hold(a, as(second, WAIT)));
      assertTrue(Duration.ofNanos(System.nanoTime() - started).compareTo(ANSWERED_WITHIN) < 0, "answered before the wait timeout");
      assertEquals(a, e.lockName());
      assertNamesTheCycle(e, a, b, first, second);
      assertEquals("deadlock", e.getTrailers().get(DeadlockException.REASON), "the stream's trailers are kept");
      assertFalse(firstWaits.isDone(), "the older wait goes on");
      heldB.close(); // the aborted side gives back what it holds
      try (Lease granted = firstWaits.get(ANSWERED_WITHIN.toMillis(), TimeUnit.MILLISECONDS)) {
        assertEquals(b, granted.name());
      }
    }
  }

  @Test
  void acquireEndedByADeadlock() throws Exception {
    String a = Support.randomName(), b = Support.randomName();
    String first = "first-" + Support.randomName(), second = "second-" + Support.randomName();
    var heldA = client.acquire(a, as(first, Duration.ZERO));
    var heldB = client.acquire(b, as(second, Duration.ZERO));
    Future<?> firstWaits = waiters.submit(() -> client.acquire(b, as(first, WAIT)));
    untilQueued(b);
    long started = System.nanoTime();
    DeadlockException e = assertThrows(DeadlockException.class, () -> client.acquire(a, as(second, WAIT)));
    assertTrue(Duration.ofNanos(System.nanoTime() - started).compareTo(ANSWERED_WITHIN) < 0, "answered before the wait timeout");
    assertEquals(a, e.lockName());
    assertNamesTheCycle(e, a, b, first, second);
    assertEquals("deadlock", e.getTrailers().get(DeadlockException.REASON), "the call's trailers are kept");
    assertTrue(client.release(b, heldB.getToken()));
    var granted = (holdfast.v1.Lock.AcquireResponse) firstWaits.get(ANSWERED_WITHIN.toMillis(), TimeUnit.MILLISECONDS);
    assertTrue(granted.getAcquired());
    client.release(b, granted.getToken());
    client.release(a, heldA.getToken());
  }

  /** Two sessions and no owners: each session is the identity (session:... in the message). */
  @Test
  void sessionHoldEndedByADeadlock() throws Exception {
    String a = Support.randomName(), b = Support.randomName();
    HoldOptions now = HoldOptions.builder().ttl(Duration.ofSeconds(30)).build();
    HoldOptions waiting = HoldOptions.builder().ttl(Duration.ofSeconds(30)).waitTimeout(WAIT).build();
    try (Session one = client.session(); Session two = client.session()) {
      one.hold(a, now);
      Lease heldB = two.hold(b, now);
      Future<Lease> oneWaits = waiters.submit(() -> one.hold(b, waiting));
      untilQueued(b);
      long started = System.nanoTime();
      DeadlockException e = assertThrows(DeadlockException.class, () -> two.hold(a, waiting));
      assertTrue(Duration.ofNanos(System.nanoTime() - started).compareTo(ANSWERED_WITHIN) < 0, "answered before the wait timeout");
      assertEquals(a, e.lockName());
      assertNamesTheCycle(e, a, b);
      assertTrue(e.getMessage().contains("owner \"session:"), e.getMessage());
      assertTrue(two.isOpen(), "a deadlock ends the wait, not the session");
      heldB.close();
      assertEquals(b, oneWaits.get(ANSWERED_WITHIN.toMillis(), TimeUnit.MILLISECONDS).name());
    }
  }

  /** Negative control: the same two waits without a cycle (the second caller holds nothing) end at their timeout. */
  @Test
  void noCycleNoDeadlock() throws Exception {
    String a = Support.randomName();
    try (Lease held = client.hold(a, as("holder-" + Support.randomName(), Duration.ZERO))) {
      // Longer than the server's --deadlock-timeout-ms (1000 by default): its walk finds no cycle.
      assertThrows(NotAcquiredException.class, () -> client.hold(a, as("waiter-" + Support.randomName(), Duration.ofMillis(2500))));
    }
  }
}
