package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import holdfast.v1.Lock.LostReason;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A session that ends other than by its close, each on a server of its own: killed (SIGKILL), or
 * frozen (SIGSTOP) so that only the unanswered ping tells. Every lease is lost at once, before its
 * deadline; the operation in flight fails naming the server and saying it may have taken effect.
 */
class SessionEndsTest {
  private static final int LOCKS = 5;
  private static final long TTL_MS = 20_000; // far longer than the tests: a loss before it is the session's end

  /** Leases under a session, a hold of it waiting for a lock another client holds, and each loss's time. */
  private static final class Scene {
    final Session session;
    final List<Lease> leases = new ArrayList<>();
    final List<CompletableFuture<Long>> lostAt = new ArrayList<>(); // System.nanoTime() of each loss
    final List<LeaseLostException> lost = new ArrayList<>();
    final CompletableFuture<Lease> waiting = new CompletableFuture<>();
    final CountDownLatch allLost = new CountDownLatch(LOCKS);

    Scene(HoldfastClient client, Session.Timing timing, HoldfastClient other) throws Exception {
      session = client.session(timing);
      for (int i = 0; i < LOCKS; i++) {
        Lease lease = session.hold(Support.randomName(), HoldOptions.builder().ttl(Duration.ofMillis(TTL_MS)).build());
        CompletableFuture<Long> at = new CompletableFuture<>();
        lease.onLost(why -> {
          at.complete(System.nanoTime());
          synchronized (lost) {
            lost.add(why);
          }
          allLost.countDown();
        });
        leases.add(lease);
        lostAt.add(at);
      }
      String taken = Support.randomName();
      other.acquire(taken, HoldOptions.builder().ttl(Duration.ofSeconds(30)).build());
      Thread waiter = new Thread(() -> {
        try {
          waiting.complete(session.hold(taken, HoldOptions.builder().waitTimeout(Duration.ofSeconds(30)).build()));
        } catch (Throwable e) {
          waiting.completeExceptionally(e);
        }
      });
      waiter.setDaemon(true);
      waiter.start();
      Support.waitUntil(() -> other.inspect(taken).getWaiters() == 1, "the session's hold to queue");
    }

    /** Every lease lost, each before its deadline, each saying why. */
    void assertAllLostInTime(String because) throws Exception {
      assertTrue(allLost.await(Support.WAIT.toMillis(), TimeUnit.MILLISECONDS), "every lease lost");
      for (int i = 0; i < LOCKS; i++) {
        Lease lease = leases.get(i);
        assertTrue(lease.deadlineNanos() - lostAt.get(i).get() > 0, "lost before its deadline: " + lease.name());
        assertEquals(LostReason.LOST_REASON_UNSPECIFIED, lease.lostException().code());
      }
      synchronized (lost) {
        for (LeaseLostException why : lost) {
          assertTrue(why.reason().contains(because), why.reason());
        }
      }
    }

    /** The hold in flight failed with the clear error: the address, and that it may have taken effect. */
    void assertInFlightFailed(String addr) {
      ExecutionException failed = assertThrows(ExecutionException.class,
          () -> waiting.get(Support.WAIT.toMillis(), TimeUnit.MILLISECONDS));
      StatusRuntimeException error = (StatusRuntimeException) failed.getCause();
      String description = error.getStatus().getDescription();
      assertTrue(description.contains("holdfast at " + addr), description);
      assertTrue(description.contains("may or may not have taken effect"), description);
    }

    /** The session reports itself ended: the next operation fails at once, sending nothing. */
    void assertEnded() {
      assertFalse(session.isOpen());
      StatusRuntimeException next = assertThrows(StatusRuntimeException.class, () -> session.inspect("any"));
      assertEquals(Status.Code.UNAVAILABLE, next.getStatus().getCode());
      assertTrue(next.getStatus().getDescription().contains("open a new one"), next.getStatus().getDescription());
    }
  }

  /** Nothing listens: the operation fails with the connection's own error, which says nothing was sent. */
  @Test
  void noServerAtAllIsNotAnOperationThatMayHaveHappened() throws Exception {
    String addr = "127.0.0.1:" + Support.freePort();
    try (HoldfastClient client = HoldfastClient.connect(addr); Session session = client.session()) {
      StatusRuntimeException error = assertThrows(StatusRuntimeException.class,
          () -> session.hold(Support.randomName(), HoldOptions.DEFAULT));
      assertEquals(Status.Code.UNAVAILABLE, error.getStatus().getCode());
      String description = error.getStatus().getDescription();
      // The refusal either answers the hold itself or has already ended the session the hold
      // came to ("has ended (…); nothing was sent"): a race of the two threads; both name it.
      assertTrue(description.contains("cannot connect to holdfast at " + addr + ": connection refused"), description);
      assertFalse(description.contains("may or may not"), description);
      assertFalse(session.isOpen());
    }
  }

  @Test
  void aKilledServerLosesEveryLeaseAtOnce() throws Exception {
    try (Support.Processes own = new Support.Processes();
        HoldfastClient client = HoldfastClient.connect(own.addr);
        HoldfastClient other = HoldfastClient.connect(own.addr)) {
      Scene scene = new Scene(client, Session.Timing.DEFAULT, other);
      own.killServer();
      scene.assertAllLostInTime("the session with holdfast at " + own.addr + " ended (UNAVAILABLE");
      scene.assertInFlightFailed(own.addr);
      scene.assertEnded();
      scene.session.close();
    }
  }

  @Test
  void anUnansweredPingCutsTheSessionOff() throws Exception {
    // A ping every 200 ms, answered within 1 s: a frozen server is found out in about a second.
    Session.Timing quick = new Session.Timing(Duration.ofMillis(200), Duration.ofSeconds(1), Duration.ZERO);
    try (Support.Processes own = new Support.Processes();
        HoldfastClient client = HoldfastClient.connect(own.addr);
        HoldfastClient other = HoldfastClient.connect(own.addr)) {
      Scene scene = new Scene(client, quick, other);
      // The control: a session that pings once a minute has nothing to tell it before its deadline.
      Session unpinged = client.session();
      Lease control = unpinged.hold(Support.randomName(), HoldOptions.builder().ttl(Duration.ofMillis(TTL_MS)).build());
      Support.waitUntil(() -> scene.session.pongs() >= 1, "a pong");
      for (Lease lease : scene.leases) {
        assertFalse(lease.isLost()); // the pongs came: nothing is lost while the server answers
      }
      own.pause();
      try {
        scene.assertAllLostInTime("no answer to a ping within 1000 ms: the connection to holdfast at " + own.addr
            + " is cut off");
        scene.assertInFlightFailed(own.addr);
        scene.assertEnded();
        assertFalse(control.isLost(), "the control session found out too");
        assertTrue(unpinged.isOpen());
      } finally {
        own.resume();
      }
      scene.session.close();
      unpinged.close();
    }
  }
}
