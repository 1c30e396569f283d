package holdfast;

import holdfast.v1.Lock.AcquireResponse;
import holdfast.v1.Lock.HoldAcquired;
import holdfast.v1.Lock.InspectRequest;
import holdfast.v1.Lock.InspectResponse;
import holdfast.v1.Lock.LostReason;
import holdfast.v1.Lock.ReleaseRequest;
import holdfast.v1.Lock.SessionPing;
import holdfast.v1.Lock.SessionRequest;
import holdfast.v1.Lock.SessionResponse;
import holdfast.v1.LockServiceGrpc;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * One Session stream (docs/sessions.md), from {@link HoldfastClient#session()}: many locks held with
 * one heartbeat (the server's one {@code renewed} message per tick for the whole session), and
 * acquire, release and inspect as one message each way. Thread-safe: operations from many threads
 * are in flight at once, matched to their answers by op id.
 *
 * <pre>{@code
 * try (Session session = client.session()) {
 *   Lease a = session.hold("jobs/a", options);
 *   Lease b = session.hold("jobs/b", options);
 *   ...
 * } // close(): the server releases every lock held under the session at once
 * }</pre>
 *
 * <p>A session is one stream. When it ends other than by {@link #close()} (the server went away, the
 * connection was cut off, a ping went unanswered), every lease held under it is lost at once, each
 * operation in flight fails with a {@link StatusRuntimeException} that names the server and says the
 * operation may or may not have taken effect, and later operations fail at once (UNAVAILABLE, nothing
 * sent): open a new session with {@link HoldfastClient#session()}.
 */
public final class Session implements AutoCloseable {
  /** How a session is timed; tests shorten it. */
  static final class Timing {
    static final Timing DEFAULT = new Timing(Duration.ofMinutes(1), HoldfastClient.CALL_TIMEOUT, Duration.ZERO);

    /** A ping this often while the session holds locks: it re-anchors deadlines and checks the stream is alive. */
    final Duration pingInterval;
    /** How long a release, an inspect or a pong may take (an acquire or hold: its wait, plus the grace). */
    final Duration callTimeout;
    /** Counts the open as this much earlier than it was: only shortens deadlines (tests of the ping's anchor). */
    final Duration openedEarlier;

    Timing(Duration pingInterval, Duration callTimeout, Duration openedEarlier) {
      this.pingInterval = pingInterval;
      this.callTimeout = callTimeout;
      this.openedEarlier = openedEarlier;
    }
  }

  private final String address;
  private final LockServiceGrpc.LockServiceBlockingStub blocking;
  private final ScheduledExecutorService timer;
  private final Timing timing;
  private final SessionAnchors anchors;
  private final Lease.Keeper keeper = new Keeper();
  private final SessionStream stream;
  private final ScheduledFuture<?> pinger;

  private final Object mu = new Object();
  private final Map<Long, Lease> holds = new HashMap<>(); // by the op id of the hold that took each lock
  private final Map<Lease, Long> holdOps = new IdentityHashMap<>();
  private boolean closing;
  private SessionStream.Pending ping; // the latest ping (the timer thread's alone)
  private long renewedMessages;
  private int lastRenewedLocks;

  Session(String address, LockServiceGrpc.LockServiceStub stub, LockServiceGrpc.LockServiceBlockingStub blocking,
      ScheduledExecutorService timer, Timing timing) {
    this.address = address;
    this.blocking = blocking;
    this.timer = timer;
    this.timing = timing;
    // Every lease_started_after_ms of the session counts from when the server received the stream.
    this.anchors = new SessionAnchors(System.nanoTime() - timing.openedEarlier.toNanos());
    long every = timing.pingInterval.toNanos();
    this.pinger = timer.scheduleAtFixedRate(this::ping, every, every, TimeUnit.NANOSECONDS); // before the stream can end
    this.stream = new SessionStream(address, stub, new Events());
  }

  /**
   * Holds {@code name} under this session until the lease is closed, the session is closed, or it ends.
   * The lease's deadline follows the session's rule: the grant, then each of the session's renewals.
   *
   * @throws NotAcquiredException when the lock is not granted within the wait timeout
   * @throws LeaseLostException when the grant arrives after its lease could have ended
   * @throws DeadlockException when the server ended the wait to break a deadlock (the message names the cycle)
   * @throws StatusRuntimeException when the server refuses the request (the unary Hold's code and
   *     message), or the session ended (UNAVAILABLE, naming the server)
   */
  public Lease hold(String name, HoldOptions options) throws NotAcquiredException, LeaseLostException, InterruptedException {
    Lease lease = new Lease(name, keeper, blocking, timer);
    Function<SessionResponse, Object> granted = response -> {
      HoldAcquired grant = response.getHold();
      synchronized (mu) {
        holds.put(response.getOpId(), lease);
        holdOps.put(lease, response.getOpId());
      }
      lease.granted(grant, anchors.deadline(grant.getLeaseStartedAfterMs(), grant.getTtlMs()));
      return lease;
    };
    SessionStream.Pending op = stream.start(SessionRequest.newBuilder().setHold(Requests.hold(name, options)), name, granted);
    try {
      stream.await(op, options.waitTimeout().plus(HoldfastClient.ACQUIRE_GRACE));
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() == Status.Code.DEADLINE_EXCEEDED) {
        throw Requests.notAcquired(name, options);
      }
      throw e;
    }
    lease.check(); // a grant that came too late was given back already
    return lease;
  }

  /**
   * Acquires {@code name} once over the session, as {@link HoldfastClient#acquire}: an ordinary grant
   * that outlives the session, with no renewals. Its lease_started_after_ms counts from the session's
   * open, not from this call.
   *
   * @throws NotAcquiredException when the lock is not granted within the wait timeout
   * @throws DeadlockException when the server ended the wait to break a deadlock (the message names the cycle)
   */
  public AcquireResponse acquire(String name, HoldOptions options) throws NotAcquiredException, InterruptedException {
    SessionStream.Pending op = stream.start(SessionRequest.newBuilder().setAcquire(Requests.acquire(name, options)), name, SessionResponse::getAcquire);
    AcquireResponse grant = (AcquireResponse) stream.await(op, options.waitTimeout().plus(HoldfastClient.ACQUIRE_GRACE));
    if (!grant.getAcquired()) {
      throw Requests.notAcquired(name, options);
    }
    return grant;
  }

  /** Releases one hold of a grant over the session, as {@link HoldfastClient#release(String, String)}. */
  public boolean release(String name, String token) throws InterruptedException {
    return release(name, token, "");
  }

  /** Releases exactly the hold {@code holdId} of a grant over the session; true when the lock was freed. */
  public boolean release(String name, String token, String holdId) throws InterruptedException {
    ReleaseRequest request = ReleaseRequest.newBuilder().setName(name).setToken(token).setHoldId(holdId).build();
    SessionStream.Pending op = stream.start(SessionRequest.newBuilder().setRelease(request), null, response -> response.getRelease().getReleased());
    return (Boolean) stream.await(op, timing.callTimeout);
  }

  /** The lock's holders, waiters and last fencing token, over the session. */
  public InspectResponse inspect(String name) throws InterruptedException {
    SessionStream.Pending op = stream.start(SessionRequest.newBuilder().setInspect(InspectRequest.newBuilder().setName(name)), null,
        SessionResponse::getInspect);
    return (InspectResponse) stream.await(op, timing.callTimeout);
  }

  /** False once the session has ended or is closing: its operations then fail at once. */
  public boolean isOpen() {
    return stream.isOpen();
  }

  /**
   * Ends the session cleanly: the server answers the operations in flight, then releases every lock held
   * under it at once. Its leases end released, not lost. Waits up to the call timeout for the end.
   */
  @Override
  public void close() {
    List<Lease> released;
    synchronized (mu) {
      if (closing) {
        return;
      }
      closing = true;
      released = forgetAll();
    }
    for (Lease lease : released) {
      lease.releasedWithSession();
    }
    stream.close(timing.callTimeout);
    pinger.cancel(false);
  }

  /** How many {@code renewed} messages the session has had (one per renewal tick, however many locks). */
  long renewedMessages() {
    synchronized (mu) {
      return renewedMessages;
    }
  }

  /** The lock count of the latest {@code renewed} message. */
  int lastRenewedLocks() {
    synchronized (mu) {
      return lastRenewedLocks;
    }
  }

  /** How many pongs the session has anchored its deadlines on (at most two are kept). */
  int pongs() {
    return anchors.pongs();
  }

  /** Pings while the session holds locks and no ping is in flight; cuts the stream off when its pong is late. */
  private void ping() {
    synchronized (mu) {
      if (holds.isEmpty() || closing) {
        return;
      }
    }
    if ((ping != null && stream.inFlight(ping)) || !stream.isOpen()) {
      return;
    }
    long sentAt = System.nanoTime(); // no later than the ping leaves
    SessionStream.Pending sent;
    try {
      sent = stream.start(SessionRequest.newBuilder().setPing(SessionPing.getDefaultInstance()), null, response -> {
        anchors.pong(sentAt, response.getPong().getReceivedAfterMs());
        return response.getPong();
      });
    } catch (StatusRuntimeException e) {
      return; // the stream ended meanwhile
    }
    ping = sent;
    long timeoutMs = timing.callTimeout.toMillis();
    timer.schedule(() -> {
      if (stream.inFlight(sent)) {
        stream.cancel("no answer to a ping within " + timeoutMs + " ms: the connection to holdfast at " + address + " is cut off");
      }
    }, timeoutMs, TimeUnit.MILLISECONDS);
  }

  /** Empties the holds (holding mu) and returns their leases. */
  private List<Lease> forgetAll() {
    List<Lease> leases = new ArrayList<>(holds.values());
    holds.clear();
    holdOps.clear();
    return leases;
  }

  /** Forgets the hold of {@code lease}; its op id, or null when it was not held (lost, released, or the session ended). */
  private Long forget(Lease lease) {
    synchronized (mu) {
      Long opId = holdOps.remove(lease);
      if (opId != null) {
        holds.remove(opId);
      }
      return opId;
    }
  }

  private static SessionRequest.Builder giveBack(String name, String token, String holdId) {
    return SessionRequest.newBuilder().setRelease(ReleaseRequest.newBuilder().setName(name).setToken(token).setHoldId(holdId));
  }

  /** What the stream tells the session: renewals, losses, unwanted grants, its end. */
  private final class Events implements SessionStream.Listener {
    @Override
    public void onEvent(SessionResponse response) {
      if (response.hasRenewed()) {
        List<Lease> renewed;
        synchronized (mu) {
          renewedMessages++;
          lastRenewedLocks = response.getRenewed().getLocks();
          renewed = new ArrayList<>(holds.values());
        }
        long deadline = anchors.deadline(response.getRenewed().getLeaseStartedAfterMs(), response.getRenewed().getTtlMs());
        for (Lease lease : renewed) {
          lease.renewed(deadline);
        }
        return;
      }
      Lease lost;
      synchronized (mu) {
        lost = holds.remove(response.getOpId());
        if (lost != null) {
          holdOps.remove(lost);
        }
      }
      if (lost != null) {
        lost.lose(response.getLost().getReason(), response.getLost().getCode());
      }
    }

    @Override
    public void onUnwanted(SessionResponse response, String lockName) {
      if (response.hasHold()) {
        stream.send(giveBack(lockName, response.getHold().getToken(), response.getHold().getHoldId()));
      } else if (response.hasAcquire() && response.getAcquire().getAcquired()) {
        stream.send(giveBack(lockName, response.getAcquire().getToken(), ""));
      }
    }

    @Override
    public void onEnd(String cause) {
      List<Lease> lost;
      synchronized (mu) {
        lost = forgetAll();
      }
      pinger.cancel(false);
      for (Lease lease : lost) {
        lease.lose(SessionErrors.leasesLost(address, cause), LostReason.LOST_REASON_UNSPECIFIED);
      }
    }
  }

  /** Gives back and forgets the session's holds for their leases. */
  private final class Keeper implements Lease.Keeper {
    @Override
    public void release(Lease lease) {
      if (forget(lease) == null) {
        return; // lost, or the session ended meanwhile
      }
      try {
        Session.this.release(lease.name(), lease.token(), lease.holdId());
      } catch (StatusRuntimeException e) {
        // The session ended or the grant was lost meanwhile: either way it is not held.
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    @Override
    public void drop(Lease lease) {
      if (forget(lease) != null) { // the server may still keep it
        stream.send(giveBack(lease.name(), lease.token(), lease.holdId()));
      }
    }
  }
}
