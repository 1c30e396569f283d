package holdfast;

import holdfast.v1.Lock.HoldAcquired;
import holdfast.v1.Lock.HoldRenewed;
import holdfast.v1.Lock.HoldRequest;
import holdfast.v1.Lock.HoldResponse;
import holdfast.v1.Lock.LostReason;
import holdfast.v1.Lock.SetValueRequest;
import holdfast.v1.Lock.ReleaseRequest;
import holdfast.v1.LockServiceGrpc;
import holdfast.fencing.Fence;
import holdfast.fencing.FenceAttach;
import io.grpc.ClientInterceptor;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One grant kept alive by an open Hold stream, from {@link HoldfastClient#hold}, or by a session, from
 * {@link Session#hold}. Use it in try-with-resources: {@link #close()} gives back exactly this hold.
 *
 * <p>The lease keeps a local deadline ({@link LeaseDeadline}) that only moves forward. When it passes
 * the lease counts as lost even though no lost event came; a grant or renewal that arrives after its
 * own deadline makes the lease lost at once (a late grant is never handed out).
 */
public final class Lease implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(Lease.class.getName());
  // How long Release may take on the way out before the stream is cancelled anyway.
  static final Duration RELEASE_TIMEOUT = Duration.ofSeconds(5);
  private static final String PAST_DEADLINE = "no renewal was confirmed before the local deadline";

  private final String name;
  private final HoldRequest request;
  private final LockServiceGrpc.LockServiceStub stub;
  private final LockServiceGrpc.LockServiceBlockingStub blocking;
  private final ScheduledExecutorService timer;
  private final Keeper keeper; // null for a lease of its own Hold stream

  /** What keeps a lease held under a session: it gives the hold back and forgets it. */
  interface Keeper {
    /** Gives back the hold (close() while it is held) and waits for the answer; never throws. */
    void release(Lease lease);

    /** The lease is closed or lost: stop telling it of renewals, give back a hold the server may still keep. */
    void drop(Lease lease);
  }

  private final Object mu = new Object();
  private final List<Consumer<LeaseLostException>> lostListeners = new ArrayList<>();
  private long sentAt; // System.nanoTime() just before the Hold call started
  private ClientCallStreamObserver<HoldRequest> call;
  private boolean acquired;
  private boolean ended;
  private boolean closing;
  private Throwable streamError;
  private String token = "";
  private String holdId = "";
  private long fencingToken;
  private String signedFence = ""; // the newest signed fence the server gave, "" when it signs none
  private int holdCount;
  private long ttlMs;
  private boolean hasDeadline;
  private long deadline; // System.nanoTime(): the lease ends no earlier than this
  private ScheduledFuture<?> deadlineCheck;
  private LeaseLostException lost; // set once the lease can no longer be trusted; never cleared

  Lease(String name, HoldRequest request, LockServiceGrpc.LockServiceStub stub,
      LockServiceGrpc.LockServiceBlockingStub blocking, ScheduledExecutorService timer) {
    this.name = name;
    this.request = request;
    this.stub = stub;
    this.blocking = blocking;
    this.timer = timer;
    this.keeper = null;
  }

  /** A lease held under a session: {@link #granted} gives it its grant. */
  Lease(String name, Keeper keeper, LockServiceGrpc.LockServiceBlockingStub blocking, ScheduledExecutorService timer) {
    this.name = name;
    this.request = null;
    this.stub = null;
    this.blocking = blocking;
    this.timer = timer;
    this.keeper = keeper;
  }

  /** The lock's name. */
  public String name() {
    return name;
  }

  /** The grant's token (a secret: never log it). */
  public String token() {
    synchronized (mu) {
      return token;
    }
  }

  /** This stream's own hold of the grant (a reentrant grant has one per holder). */
  public String holdId() {
    synchronized (mu) {
      return holdId;
    }
  }

  /** The fencing token: pass it to whatever the lock protects, which rejects smaller ones. */
  public long fencingToken() {
    synchronized (mu) {
      return fencingToken;
    }
  }

  /**
   * This lease's fence for a resource guarded by holdfast.fencing: the lock's name, the fencing token and,
   * when the server signs fences, the newest signed fence it gave (the grant's, then each renewal's,
   * which states the renewed lease's end; a lease kept by a Session keeps its grant's, which states none).
   * Ask again before each request: a renewal brings a fresh one.
   */
  public Fence fence() {
    synchronized (mu) {
      return Fence.issued(name, fencingToken, signedFence);
    }
  }

  /**
   * Puts this lease's fence on gRPC {@code metadata} ({@code holdfast-fence} when signed,
   * {@code holdfast-fence-lock}, {@code holdfast-fence-token}); returns it.
   */
  public Metadata fence(Metadata metadata) {
    return FenceAttach.metadata(fence(), metadata);
  }

  /**
   * An interceptor that sends this lease's fence, as it is at each call (a renewal's fresh signed fence
   * included), on every call: {@code stub.withInterceptors(lease.fenceInterceptor())}.
   */
  public ClientInterceptor fenceInterceptor() {
    return new ClientInterceptor() {
      @Override
      public <Q, R> io.grpc.ClientCall<Q, R> interceptCall(io.grpc.MethodDescriptor<Q, R> method,
          io.grpc.CallOptions options, io.grpc.Channel next) {
        return FenceAttach.interceptor(fence()).interceptCall(method, options, next);
      }
    };
  }

  /**
   * Puts this lease's fence into HTTP {@code headers} ({@code Holdfast-Fence} when signed,
   * {@code Holdfast-Fence-Lock}, {@code Holdfast-Fence-Token}); returns them.
   */
  public <M extends Map<String, String>> M fenceHeaders(M headers) {
    return FenceAttach.headers(fence(), headers);
  }

  /** How many holds the grant had when it was made (reentrant holders share one grant). */
  public int holdCount() {
    synchronized (mu) {
      return holdCount;
    }
  }

  /** The lease length the server granted. */
  public Duration ttl() {
    synchronized (mu) {
      return Duration.ofMillis(ttlMs);
    }
  }

  /** The conservative end of the lease as a {@link System#nanoTime()} value; it only moves forward. */
  public long deadlineNanos() {
    synchronized (mu) {
      return deadline;
    }
  }

  /** How long the lease has left by the local deadline (zero or negative once it has passed). */
  public Duration remaining() {
    return Duration.ofNanos(deadlineNanos() - System.nanoTime());
  }

  /** True once the lease can no longer be trusted; it checks the local deadline before it answers. */
  public boolean isLost() {
    return lostException() != null;
  }

  /** Why the lease was lost, or null while it is held. */
  public LeaseLostException lostException() {
    boolean past;
    synchronized (mu) {
      if (lost != null || closing) {
        return lost;
      }
      past = hasDeadline && LeaseDeadline.passed(deadline, System.nanoTime());
    }
    if (past) {
      lose(PAST_DEADLINE, LostReason.LOST_REASON_UNSPECIFIED);
    }
    synchronized (mu) {
      return lost;
    }
  }

  /** Throws {@link LeaseLostException} when the lease is lost: a fencing point before a side effect. */
  public void check() throws LeaseLostException {
    LeaseLostException why = lostException();
    if (why != null) {
      throw why;
    }
  }

  /**
   * Runs {@code listener} once when the lease is lost (at once, on this thread, if it already is).
   * It runs on a gRPC or timer thread: keep it short. Not called after {@link #close()}.
   */
  public void onLost(Consumer<LeaseLostException> listener) {
    LeaseLostException already;
    synchronized (mu) {
      already = lost;
      if (already == null) {
        lostListeners.add(listener);
        return;
      }
    }
    listener.accept(already);
  }

  /** Replaces the value this grant publishes to watchers; NOT_FOUND once the grant is gone. */
  public void setValue(String value) {
    blocking.withDeadlineAfter(RELEASE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
        .setValue(SetValueRequest.newBuilder().setName(name).setToken(token()).setValue(value).build());
  }

  /** Gives back exactly this stream's hold (Release with token and hold id), then ends the stream. Safe to call twice. */
  @Override
  public void close() {
    boolean held;
    synchronized (mu) {
      if (closing) {
        return;
      }
      closing = true;
      held = acquired && lost == null && !ended;
    }
    if (held && keeper != null) {
      keeper.release(this);
    } else if (held) {
      try {
        blocking.withDeadlineAfter(RELEASE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
            .release(ReleaseRequest.newBuilder().setName(name).setToken(token()).setHoldId(holdId()).build());
      } catch (StatusRuntimeException e) {
        // Lost meanwhile, or unreachable: the cancel frees the hold on a live connection.
      }
    }
    closeStream();
  }

  /** Starts the Hold stream and waits up to {@code waitNanos} for the grant. */
  void open(long waitNanos) throws NotAcquiredException, LeaseLostException, InterruptedException {
    synchronized (mu) {
      sentAt = System.nanoTime();
    }
    stub.hold(request, new Observer());
    Throwable error;
    boolean granted;
    synchronized (mu) {
      long end = System.nanoTime() + waitNanos;
      try {
        for (long left = waitNanos; !acquired && !ended && left > 0; left = end - System.nanoTime()) {
          TimeUnit.NANOSECONDS.timedWait(mu, left);
        }
      } catch (InterruptedException e) {
        closeStreamLocked();
        throw e;
      }
      granted = acquired;
      error = streamError;
    }
    if (granted) {
      LeaseLostException late = lostException(); // a grant that came too late is never handed out
      if (late == null) {
        return;
      }
      closeStream();
      throw late;
    }
    closeStream(); // frees the hold at once if the server still keeps it and can hear us
    if (error == null || Status.fromThrowable(error).getCode() == Status.Code.DEADLINE_EXCEEDED) {
      throw new NotAcquiredException(
          "lock \"" + name + "\" was not acquired within " + request.getWaitTimeoutMs() + " ms");
    }
    throw DeadlockException.classify(error, name);
  }

  private void closeStream() {
    synchronized (mu) {
      closeStreamLocked();
    }
    if (keeper != null) {
      keeper.drop(this);
    }
  }

  private void closeStreamLocked() {
    closing = true;
    if (deadlineCheck != null) {
      deadlineCheck.cancel(false);
    }
    mu.notifyAll();
    if (call != null && !ended) {
      call.cancel("lease closed", null);
    }
  }

  private void onEvent(HoldResponse response) {
    String what;
    synchronized (mu) {
      switch (response.getEventCase()) {
        case ACQUIRED:
          HoldAcquired grant = response.getAcquired();
          takeGrant(grant, LeaseDeadline.of(sentAt, grant.getLeaseStartedAfterMs(), grant.getTtlMs()));
          what = "the grant";
          break;
        case RENEWED:
          HoldRenewed renewal = response.getRenewed();
          moveDeadline(LeaseDeadline.of(sentAt, renewal.getLeaseStartedAfterMs(), renewal.getTtlMs()));
          if (renewal.getSignedFencesCount() > 0) {
            signedFence = renewal.getSignedFences(0); // a Hold's one fence, stating the renewed lease's end
          }
          what = "a renewal";
          break;
        case LOST:
          what = null;
          break;
        default:
          return;
      }
      mu.notifyAll();
    }
    if (what == null) {
      lose(response.getLost().getReason(), response.getLost().getCode());
    } else {
      loseIfLate(what);
    }
  }

  /** A session granted this lease's hold, vouching for {@code deadline}; check {@link #lostException()} after. */
  void granted(HoldAcquired grant, long deadline) {
    synchronized (mu) {
      takeGrant(grant, deadline);
    }
    loseIfLate("the grant");
  }

  /** The session's renewal vouches for {@code deadline}: the deadline moves to it if that is later. */
  void renewed(long deadline) {
    synchronized (mu) {
      if (lost != null || closing) {
        return;
      }
      moveDeadline(deadline);
    }
    loseIfLate("a renewal");
  }

  /** The session was closed cleanly, which releases this hold: the lease ends released, not lost. */
  void releasedWithSession() {
    synchronized (mu) {
      closeStreamLocked();
    }
  }

  private void takeGrant(HoldAcquired grant, long leaseDeadline) {
    token = grant.getToken();
    holdId = grant.getHoldId();
    fencingToken = grant.getFencingToken();
    signedFence = grant.getSignedFence();
    holdCount = grant.getHoldCount();
    ttlMs = grant.getTtlMs();
    acquired = true;
    moveDeadline(leaseDeadline);
  }

  private void loseIfLate(String what) {
    if (LeaseDeadline.passed(deadlineNanos(), System.nanoTime())) {
      lose(what + " arrived after the lease could have ended", LostReason.LOST_REASON_UNSPECIFIED);
    }
  }

  private void moveDeadline(long next) {
    if (hasDeadline && LeaseDeadline.later(deadline, next) == deadline) {
      return; // it would not move forward
    }
    deadline = next;
    hasDeadline = true;
    if (deadlineCheck != null) {
      deadlineCheck.cancel(false);
    }
    if (!closing) {
      deadlineCheck = timer.schedule(() -> { isLost(); }, Math.max(0, next - System.nanoTime()), TimeUnit.NANOSECONDS);
    }
  }

  private void onEnd(Throwable error) {
    boolean wasHeld;
    synchronized (mu) {
      ended = true;
      streamError = error;
      mu.notifyAll();
      wasHeld = acquired && !closing;
    }
    if (wasHeld) {
      Status status = error == null ? Status.OK : Status.fromThrowable(error);
      lose(error == null ? "the Hold stream ended"
          : "the Hold stream ended: " + status.getCode() + " " + status.getDescription(),
          LostReason.LOST_REASON_UNSPECIFIED);
    }
  }

  /** The lease is lost, for {@code reason}; also the session's word (its lost message, or its end). */
  void lose(String reason, LostReason code) {
    List<Consumer<LeaseLostException>> listeners;
    LeaseLostException why;
    synchronized (mu) {
      if (lost != null || closing) {
        return;
      }
      why = new LeaseLostException(name, reason, code);
      lost = why;
      if (deadlineCheck != null) {
        deadlineCheck.cancel(false);
      }
      mu.notifyAll();
      listeners = new ArrayList<>(lostListeners);
      lostListeners.clear();
    }
    if (keeper != null) {
      keeper.drop(this);
    }
    for (Consumer<LeaseLostException> listener : listeners) {
      try {
        listener.accept(why);
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "a lost listener of lock \"" + name + "\" threw", e);
      }
    }
  }

  private final class Observer implements ClientResponseObserver<HoldRequest, HoldResponse> {
    @Override
    public void beforeStart(ClientCallStreamObserver<HoldRequest> requestStream) {
      synchronized (mu) {
        call = requestStream;
      }
    }

    @Override
    public void onNext(HoldResponse response) {
      onEvent(response);
    }

    @Override
    public void onError(Throwable error) {
      onEnd(error);
    }

    @Override
    public void onCompleted() {
      onEnd(null);
    }
  }
}
