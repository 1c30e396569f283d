package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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

  /** How the callers of a test take a lock: {@code who} waits up to {@code wait}; returns how to give it back. */
  interface Taker {
    AutoCloseable take(String name, String who, Duration wait) throws Exception;
  }

  /**
   * The cycle: {@code first} holds a, {@code second} holds b; first waits for b, then (the younger wait)
   * second for a. Second's wait must end with a DeadlockException for a that names both locks (and
   * {@code named}); once second gives b back, first is granted b.
   */
  private static DeadlockException cycle(Taker taker, String first, String second, String... named) throws Exception {
    String a = Support.randomName(), b = Support.randomName();
    try (AutoCloseable heldA = taker.take(a, first, Duration.ZERO)) {
      AutoCloseable heldB = taker.take(b, second, Duration.ZERO); // given back below (a failed test leaves it to its ttl)
      Future<AutoCloseable> firstWaits = waiters.submit(() -> taker.take(b, first, WAIT));
      // Queued before the second wait starts, so that the second is the younger one.
      Support.waitUntil(() -> client.inspect(b).getWaiters() > 0, "a waiter queued on " + b);
      long started = System.nanoTime();
      DeadlockException e = assertThrows(DeadlockException.class, () -> taker.take(a, second, WAIT));
      assertTrue(Duration.ofNanos(System.nanoTime() - started).compareTo(ANSWERED_WITHIN) < 0, "answered before the wait timeout");
      assertEquals(a, e.lockName());
      assertTrue(e.getMessage().startsWith("deadlock: "), e.getMessage());
      List<String> parts = new ArrayList<>(List.of(a, b));
      parts.addAll(List.of(named));
      for (String part : parts) {
        assertTrue(e.getMessage().contains("\"" + part + "\""), "the message names " + part + ": " + e.getMessage());
      }
      assertFalse(firstWaits.isDone(), "the older wait goes on");
      heldB.close(); // the aborted side gives back what it holds
      firstWaits.get(ANSWERED_WITHIN.toMillis(), TimeUnit.MILLISECONDS).close();
      return e;
    }
  }

  @Test
  void holdEndedByADeadlockThenTheOtherIsGranted() throws Exception {
    String first = "first-" + Support.randomName(), second = "second-" + Support.randomName();
    DeadlockException e = cycle((name, owner, wait) -> client.hold(name, as(owner, wait)), first, second, first, second);
    assertEquals("deadlock", e.getTrailers().get(DeadlockException.REASON), "the stream's trailers are kept");
  }

  @Test
  void acquireEndedByADeadlock() throws Exception {
    String first = "first-" + Support.randomName(), second = "second-" + Support.randomName();
    DeadlockException e = cycle((name, owner, wait) -> {
      String token = client.acquire(name, as(owner, wait)).getToken();
      return () -> client.release(name, token);
    }, first, second, first, second);
    assertEquals("deadlock", e.getTrailers().get(DeadlockException.REASON), "the call's trailers are kept");
  }

  /** Two sessions and no owners: each session is the identity (session:... in the message). */
  @Test
  void sessionHoldEndedByADeadlock() throws Exception {
    try (Session one = client.session(); Session two = client.session()) {
      Map<String, Session> sessions = Map.of("one", one, "two", two);
      DeadlockException e = cycle((name, who, wait) ->
          sessions.get(who).hold(name, HoldOptions.builder().ttl(Duration.ofSeconds(30)).waitTimeout(wait).build()), "one", "two");
      assertTrue(e.getMessage().contains("owner \"session:"), e.getMessage());
      assertTrue(two.isOpen(), "a deadlock ends the wait, not the session");
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
