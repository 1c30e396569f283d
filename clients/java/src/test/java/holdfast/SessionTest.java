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
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Sessions against a live server: many locks under one heartbeat, a clean close, bad input, the ping's anchor. */
class SessionTest {
  private static final int MANY = 200;
  private static Support.Processes processes; // when HOLDFAST_ADDR names no running server
  private static String redisUrl;
  private static ManagedChannel channel;
  private static HoldfastClient client; // the sessions' client
  private static HoldfastClient other; // another client, on its own connection, that checks what the server holds

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
    other = HoldfastClient.connect(addr);
  }

  @AfterAll
  static void disconnect() throws Exception {
    client.close();
    other.close();
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    if (processes != null) {
      processes.close();
    }
  }

  private static HoldOptions options(long ttlMs, long waitMs) {
    return HoldOptions.builder().ttl(Duration.ofMillis(ttlMs)).waitTimeout(Duration.ofMillis(waitMs)).build();
  }

  @Test
  void manyLocksUnderOneHeartbeatThenOneCloseFreesThemAll() throws Exception {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < MANY; i++) {
      names.add(Support.randomName());
    }
    List<Lease> leases = new ArrayList<>();
    Session session = client.session();
    ExecutorService callers = Executors.newFixedThreadPool(16); // many holds in flight at once on the one stream
    try {
      List<Future<Lease>> held = new ArrayList<>();
      for (String name : names) {
        held.add(callers.submit(() -> session.hold(name, options(900, 0))));
      }
      for (Future<Lease> lease : held) {
        leases.add(lease.get(Support.WAIT.toMillis(), TimeUnit.MILLISECONDS));
      }
    } finally {
      callers.shutdownNow();
    }
    List<Long> granted = new ArrayList<>();
    for (Lease lease : leases) {
      granted.add(lease.deadlineNanos());
    }

    // Every lock renewed several times (a renewal every ~300 ms moves its deadline ~300 ms), counted by
    // the session's renewed messages and by Redis, which writes each lease renewed once (one ZADD).
    long renewedBefore = session.renewedMessages();
    long zaddsBefore = Support.redisCalls(redisUrl, "zadd");
    long moved = TimeUnit.MILLISECONDS.toNanos(900);
    Support.waitUntil(() -> {
      for (int i = 0; i < MANY; i++) {
        if (leases.get(i).deadlineNanos() - granted.get(i) < moved) {
          return false;
        }
      }
      return true;
    }, "every lease's deadline to move 900 ms");
    long renewedMessages = session.renewedMessages() - renewedBefore;
    long renewals = Support.redisCalls(redisUrl, "zadd") - zaddsBefore;
    System.out.println("session of " + MANY + " locks: " + renewedMessages + " renewed messages, " + renewals
        + " leases renewed in Redis (ZADD) meanwhile");
    assertEquals(MANY, session.lastRenewedLocks());
    assertTrue(renewals >= 2L * MANY, "every lock renewed 3 times or so, got " + renewals + " renewals");
    assertTrue(renewedMessages * 10 < renewals, renewedMessages + " renewed messages for " + renewals + " renewals");

    for (int i = 0; i < MANY; i++) {
      Lease lease = leases.get(i);
      assertNull(lease.lostException(), lease.name());
      assertTrue(lease.deadlineNanos() - granted.get(i) > 0, "the renewals moved the deadline of " + lease.name());
      List<Holder> holders = other.inspect(lease.name()).getHoldersList();
      assertEquals(1, holders.size(), lease.name());
      assertEquals(lease.fencingToken(), holders.get(0).getFencingToken());
    }

    session.close();
    assertFalse(session.isOpen());
    for (Lease lease : leases) {
      assertNull(lease.lostException(), "closed with the session, not lost: " + lease.name());
      // Free at once: a try with no wait gets it (the leases had up to 900 ms left).
      AcquireResponse grant = other.acquire(lease.name(), options(5000, 0));
      assertTrue(other.release(lease.name(), grant.getToken()));
    }
  }

  @Test
  void leaseCloseGivesBackExactlyItsHoldAndTheSessionGoesOn() throws Exception {
    String first = Support.randomName();
    String second = Support.randomName();
    try (Session session = client.session()) {
      Lease a = session.hold(first, options(3000, 0));
      try (Lease b = session.hold(second, options(3000, 0))) {
        assertTrue(a.fencingToken() > 0);
        a.close();
        assertNull(a.lostException());
        assertEquals(List.of(), other.inspect(first).getHoldersList());
        assertEquals(b.fencingToken(), session.inspect(second).getHolders(0).getFencingToken());
        assertFalse(b.isLost());
      }
      assertEquals(List.of(), other.inspect(second).getHoldersList());

      // acquire and release over the session: an ordinary grant, as the unary calls make.
      AcquireResponse grant = session.acquire(first, options(3000, 0));
      assertThrows(NotAcquiredException.class, () -> session.acquire(first, options(3000, 0)));
      assertThrows(NotAcquiredException.class, () -> session.hold(first, options(3000, 100)));
      assertTrue(session.release(first, grant.getToken()));
      assertEquals(List.of(), other.inspect(first).getHoldersList());
    }
  }

  /** An interrupted wait sends a cancel: the server drops the waiter, and nothing is granted to nobody. */
  @Test
  void anInterruptedHoldIsCancelledOnTheServer() throws Exception {
    String name = Support.randomName();
    AcquireResponse first = other.acquire(name, options(30_000, 0));
    try (Session session = client.session()) {
      CompletableFuture<Throwable> ended = new CompletableFuture<>();
      Thread waiter = new Thread(() -> {
        try {
          session.hold(name, options(3000, 30_000)).close();
          ended.complete(null);
        } catch (Throwable e) {
          ended.complete(e);
        }
      });
      waiter.start();
      Support.waitUntil(() -> other.inspect(name).getWaiters() == 1, "the session's hold to queue");
      waiter.interrupt();
      assertTrue(ended.get(Support.WAIT.toMillis(), TimeUnit.MILLISECONDS) instanceof InterruptedException);
      Support.waitUntil(() -> other.inspect(name).getWaiters() == 0, "the cancel to reach the server");
      assertTrue(other.release(name, first.getToken()));
      assertEquals(List.of(), session.inspect(name).getHoldersList());
      assertTrue(session.isOpen());
    }
  }

  @Test
  void lostWhenTheServerSaysSo() throws Exception {
    String name = Support.randomName();
    try (Session session = client.session(); Lease lease = session.hold(name, options(600, 0));
        Lease bystander = session.hold(Support.randomName(), options(600, 0))) {
      CompletableFuture<LeaseLostException> told = new CompletableFuture<>();
      lease.onLost(told::complete);
      String[] keys = Support.lockKeys(name);
      Support.redisCommand(redisUrl, "DEL", keys[0], keys[1], keys[2]);
      LeaseLostException lost = told.get(Support.WAIT.toMillis(), TimeUnit.MILLISECONDS);
      assertEquals(LostReason.LOST_REASON_EXPIRED, lost.code(), lost.reason());
      assertThrows(LeaseLostException.class, lease::check);
      long renewed = session.renewedMessages();
      Support.waitUntil(() -> session.renewedMessages() - renewed >= 2, "two more renewals");
      assertNull(bystander.lostException());
      assertEquals(1, session.lastRenewedLocks());
    }
  }

  /** Each bad operation over the session fails as its unary call does: same code, same message. */
  @Test
  void badOperationsFailAsTheirUnaryCalls() throws Exception {
    try (Session session = client.session()) {
      String name = Support.randomName();
      HoldOptions negativeTtl = HoldOptions.builder().ttl(Duration.ofMillis(-5)).build();
      sameError(() -> client.hold("", HoldOptions.DEFAULT), () -> session.hold("", HoldOptions.DEFAULT));
      sameError(() -> client.acquire(name, negativeTtl), () -> session.acquire(name, negativeTtl));
      sameError(() -> client.release(name, "not-a-token"), () -> session.release(name, "not-a-token"));
      assertTrue(session.isOpen());
      assertEquals(0, session.inspect(name).getHoldersCount());
    }
  }

  private static void sameError(Executable unary, Executable overSession) {
    StatusRuntimeException want = assertThrows(StatusRuntimeException.class, unary);
    StatusRuntimeException got = assertThrows(StatusRuntimeException.class, overSession);
    assertEquals(want.getStatus().getCode(), got.getStatus().getCode());
    assertEquals(want.getStatus().getDescription(), got.getStatus().getDescription());
  }

  /**
   * The pong is an anchor: the session below counts its open 1.5 s earlier than it was (safe: that
   * only shortens deadlines), so from the open a 3 s lease never shows more than 1.5 s left. Counted
   * from a pong, a renewal shows nearly the whole 3 s. The session that does not ping is the control.
   */
  @Test
  void aPongReanchorsTheDeadline() throws Exception {
    Duration early = Duration.ofMillis(1500);
    long fromOpenAtMost = TimeUnit.MILLISECONDS.toNanos(3000 - 1500);
    Session.Timing pinging = new Session.Timing(Duration.ofMillis(100), Duration.ofSeconds(5), early);
    Session.Timing silent = new Session.Timing(Duration.ofHours(1), Duration.ofSeconds(5), early);
    try (Session session = client.session(pinging); Lease lease = session.hold(Support.randomName(), options(3000, 0))) {
      Support.waitUntil(() -> session.pongs() >= 1 && lease.remaining().toNanos() > fromOpenAtMost + 500_000_000L,
          "a renewal counted from a pong");
      assertNull(lease.lostException());
    }
    try (Session session = client.session(silent); Lease lease = session.hold(Support.randomName(), options(3000, 0))) {
      long renewed = session.renewedMessages();
      Support.waitUntil(() -> session.renewedMessages() - renewed >= 3, "three renewals");
      assertEquals(0, session.pongs());
      assertTrue(lease.remaining().toNanos() <= fromOpenAtMost, "from the open: " + lease.remaining());
      assertNull(lease.lostException());
    }
  }
}
