package holdfast;

import holdfast.v1.Lock.AcquireResponse;
import holdfast.v1.Lock.HoldAcquired;
import holdfast.v1.Lock.InspectRequest;
import holdfast.v1.Lock.InspectResponse;
import holdfast.v1.Lock.LostReason;
import holdfast.v1.Lock.ReleaseRequest;
import holdfast.v1.Lock.SessionClose;
import holdfast.v1.Lock.SessionPing;
import holdfast.v1.Lock.SessionRequest;
import holdfast.v1.Lock.SessionResponse;
import holdfast.v1.LockServiceGrpc;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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

  /** One operation in flight. */
  private static final class Pending {
    final long opId;
    final CompletableFuture<Object> answer = new CompletableFuture<>();
    final Function<SessionResponse, Object> onAnswer; // runs on the stream's thread, before later messages
    final String lockName; // an acquire's or hold's: given back if granted after its caller gave up
    boolean abandoned;

    Pending(long opId, Function<SessionResponse, Object> onAnswer, String lockName) {
      this.opId = opId;
      this.onAnswer = onAnswer;
      this.lockName = lockName;
    }
  }

  private final String address;
  private final LockServiceGrpc.LockServiceBlockingStub blocking;
  private final ScheduledExecutorService timer;
  private final Timing timing;
  private final SessionAnchors anchors;
  private final Lease.Keeper keeper = new Keeper();

  private final Object mu = new Object();
  private ClientCallStreamObserver<SessionRequest> call;
  private final Map<Long, Pending> pending = new HashMap<>();
  private final Map<Long, Lease> holds = new HashMap<>(); // by the op id of the hold that took each lock
  private final Map<Lease, Long> holdOps = new IdentityHashMap<>();
  private long nextOpId = 1;
  private boolean closing;
  private String cutOff; // why this side cancelled the stream
  private String endCause; // set once the stream has ended
  private final CompletableFuture<Void> ended = new CompletableFuture<>();
  private final ScheduledFuture<?> pinger;
  private long pingOpId; // the latest ping's
  private long renewedMessages;
  private int lastRenewedLocks;

  Session(String address, LockServiceGrpc.LockServiceStub stub, LockServiceGrpc.LockServiceBlockingStub blocking,
      ScheduledExecutorService timer, Timing timing) {
    this.address = address;
    this.blocking = blocking;
    this.timer = timer;
    this.timing = timing;
    // Every lease_started_after_ms of the session counts from when the server received the stream.
    long every = timing.pingInterval.toNanos();
    this.pinger = timer.scheduleAtFixedRate(this::ping, every, every, TimeUnit.NANOSECONDS); // before the stream can end
    this.anchors = new SessionAnchors(System.nanoTime() - timing.openedEarlier.toNanos());
    stub.session(new Observer());
  }

  /**
   * Holds {@code name} under this session until the lease is closed, the session is closed, or it ends.
   * The lease's deadline follows the session's rule: the grant, then each of the session's renewals.
   *
   * @throws NotAcquiredException when the lock is not granted within the wait timeout
   * @throws LeaseLostException when the grant arrives after its lease could have ended
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
    Pending op = start(SessionRequest.newBuilder().setHold(Requests.hold(name, options)), name, granted);
    try {
      await(op, options.waitTimeout().plus(HoldfastClient.ACQUIRE_GRACE));
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
   */
  public AcquireResponse acquire(String name, HoldOptions options) throws NotAcquiredException, InterruptedException {
    Pending op = start(SessionRequest.newBuilder().setAcquire(Requests.acquire(name, options)), name, SessionResponse::getAcquire);
    AcquireResponse grant = (AcquireResponse) await(op, options.waitTimeout().plus(HoldfastClient.ACQUIRE_GRACE));
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
    Pending op = start(SessionRequest.newBuilder().setRelease(request), null, response -> response.getRelease().getReleased());
    return (Boolean) await(op, timing.callTimeout);
  }

  /** The lock's holders, waiters and last fencing token, over the session. */
  public InspectResponse inspect(String name) throws InterruptedException {
    Pending op = start(SessionRequest.newBuilder().setInspect(InspectRequest.newBuilder().setName(name)), null,
        SessionResponse::getInspect);
    return (InspectResponse) await(op, timing.callTimeout);
  }

  /** False once the session has ended or is closing: its operations then fail at once. */
  public boolean isOpen() {
    synchronized (mu) {
      return !closing && endCause == null;
    }
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
      if (endCause == null) {
        call.onNext(SessionRequest.newBuilder().setOpId(nextOpId++).setClose(SessionClose.getDefaultInstance()).build());
        call.onCompleted();
      }
    }
    for (Lease lease : released) {
      lease.releasedWithSession();
    }
    try {
      ended.get(timing.callTimeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      cancel("the session's close was interrupted");
    } catch (ExecutionException | TimeoutException e) {
      cancel("the server did not end the session within " + timing.callTimeout.toMillis() + " ms of its close");
    }
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

  /** Sends one operation; {@code onAnswer} makes its result on the stream's thread. */
  private Pending start(SessionRequest.Builder op, String lockName, Function<SessionResponse, Object> onAnswer) {
    synchronized (mu) {
      if (closing || endCause != null) {
        throw SessionErrors.ended(address, endCause != null ? endCause : "it was closed");
      }
      Pending started = new Pending(nextOpId++, onAnswer, lockName);
      pending.put(started.opId, started);
      call.onNext(op.setOpId(started.opId).build());
      return started;
    }
  }

  /** Waits for the answer to {@code op}; past {@code timeout}, cancels the operation and throws DEADLINE_EXCEEDED. */
  private Object await(Pending op, Duration timeout) throws InterruptedException {
    try {
      return op.answer.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      if (abandon(op.opId)) {
        throw SessionErrors.timedOut(address, timeout.toMillis());
      }
      return result(op.answer); // answered as it timed out
    } catch (InterruptedException e) {
      abandon(op.opId);
      throw e;
    } catch (ExecutionException e) {
      throw rethrown(e);
    }
  }

  private static Object result(CompletableFuture<Object> answer) throws InterruptedException {
    try {
      return answer.get();
    } catch (ExecutionException e) {
      throw rethrown(e);
    }
  }

  private static RuntimeException rethrown(ExecutionException e) {
    Throwable cause = e.getCause();
    if (cause instanceof RuntimeException) {
      return (RuntimeException) cause;
    }
    if (cause instanceof Error) {
      throw (Error) cause;
    }
    return new IllegalStateException(cause);
  }

  /** Gives up on an operation still in flight (the server answers its cancel); false when it was answered already. */
  private boolean abandon(long opId) {
    synchronized (mu) {
      Pending op = pending.get(opId);
      if (op == null) {
        return false;
      }
      op.abandoned = true;
      send(SessionRequest.newBuilder().setCancel(opId));
      return true;
    }
  }

  /** Sends an operation whose answer nobody waits for. Holding mu. */
  private void send(SessionRequest.Builder op) {
    if (endCause == null && !closing) {
      call.onNext(op.setOpId(nextOpId++).build());
    }
  }

  /** Pings while the session holds locks and no ping is in flight; cuts the stream off when its pong is late. */
  private void ping() {
    long sentAt = System.nanoTime(); // no later than the ping leaves
    long opId;
    synchronized (mu) {
      if (holds.isEmpty() || pending.containsKey(pingOpId) || closing || endCause != null) {
        return;
      }
      opId = start(SessionRequest.newBuilder().setPing(SessionPing.getDefaultInstance()), null, response -> {
        anchors.pong(sentAt, response.getPong().getReceivedAfterMs());
        return response.getPong();
      }).opId;
      pingOpId = opId;
    }
    long timeoutMs = timing.callTimeout.toMillis();
    timer.schedule(() -> {
      boolean unanswered;
      synchronized (mu) {
        unanswered = pending.containsKey(opId);
      }
      if (unanswered) {
        cancel("no answer to a ping within " + timeoutMs + " ms: the connection to holdfast at " + address + " is cut off");
      }
    }, timeoutMs, TimeUnit.MILLISECONDS);
  }

  /** Cancels the stream; its end then reports {@code why} to every lease and operation. */
  private void cancel(String why) {
    ClientCallStreamObserver<SessionRequest> stream;
    synchronized (mu) {
      if (endCause != null) {
        return;
      }
      cutOff = why;
      stream = call;
    }
    stream.cancel(why, null);
  }

  /** Empties the holds (holding mu) and returns their leases. */
  private List<Lease> forgetAll() {
    List<Lease> leases = new ArrayList<>(holds.values());
    holds.clear();
    holdOps.clear();
    return leases;
  }

  private void onMessage(SessionResponse response) {
    switch (response.getResultCase()) {
      case RENEWED:
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
      case LOST:
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
        return;
      default:
        answer(response);
    }
  }

  private void answer(SessionResponse response) {
    Pending op;
    synchronized (mu) {
      op = pending.remove(response.getOpId());
      if (op == null) {
        return; // a release or cancel nobody waits for
      }
      if (op.abandoned) {
        giveBackUnwanted(response, op.lockName);
        return;
      }
    }
    if (response.hasError()) {
      op.answer.completeExceptionally(SessionErrors.of(response.getError()));
      return;
    }
    try {
      op.answer.complete(op.onAnswer.apply(response));
    } catch (RuntimeException e) {
      op.answer.completeExceptionally(e);
    }
  }

  /** An acquire or hold granted after its caller gave up (the answer crossed the cancel): nobody else will release it. Holding mu. */
  private void giveBackUnwanted(SessionResponse response, String lockName) {
    if (response.hasHold()) {
      send(SessionRequest.newBuilder().setRelease(ReleaseRequest.newBuilder().setName(lockName)
          .setToken(response.getHold().getToken()).setHoldId(response.getHold().getHoldId())));
    } else if (response.hasAcquire() && response.getAcquire().getAcquired()) {
      send(SessionRequest.newBuilder().setRelease(ReleaseRequest.newBuilder().setName(lockName)
          .setToken(response.getAcquire().getToken())));
    }
  }

  private void onEnd(Status status) {
    List<Pending> failed;
    List<Lease> lost;
    String cause;
    synchronized (mu) {
      cause = cutOff != null ? cutOff : SessionErrors.cause(status);
      endCause = cause;
      failed = new ArrayList<>(pending.values());
      pending.clear();
      lost = forgetAll();
    }
    pinger.cancel(false);
    Status.Code code = status.isOk() || cutOff != null ? Status.Code.UNAVAILABLE : status.getCode();
    for (Pending op : failed) {
      op.answer.completeExceptionally(SessionErrors.inFlight(address, code, cause));
    }
    for (Lease lease : lost) {
      lease.lose(SessionErrors.leasesLost(address, cause), LostReason.LOST_REASON_UNSPECIFIED);
    }
    ended.complete(null);
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
      ReleaseRequest giveBack = ReleaseRequest.newBuilder().setName(lease.name()).setToken(lease.token())
          .setHoldId(lease.holdId()).build();
      synchronized (mu) {
        if (forget(lease) != null) { // the server may still keep it
          send(SessionRequest.newBuilder().setRelease(giveBack));
        }
      }
    }

    private Long forget(Lease lease) {
      synchronized (mu) {
        Long opId = holdOps.remove(lease);
        if (opId != null) {
          holds.remove(opId);
        }
        return opId;
      }
    }
  }

  private final class Observer implements ClientResponseObserver<SessionRequest, SessionResponse> {
    @Override
    public void beforeStart(ClientCallStreamObserver<SessionRequest> requestStream) {
      synchronized (mu) {
        call = requestStream;
      }
    }

    @Override
    public void onNext(SessionResponse response) {
      onMessage(response);
    }

    @Override
    public void onError(Throwable error) {
      onEnd(Status.fromThrowable(error));
    }

    @Override
    public void onCompleted() {
      onEnd(Status.OK);
    }
  }
}
