package holdfast;

import holdfast.v1.Lock.SessionClose;
import holdfast.v1.Lock.SessionRequest;
import holdfast.v1.Lock.SessionResponse;
import holdfast.v1.LockServiceGrpc;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * The operations of one Session stream: op ids chosen here, answers matched to them in any order,
 * and how an operation fails when the stream ends under it. {@link Session} says what the answers
 * and the session-wide messages mean.
 */
final class SessionStream {
  /** What the stream tells its session. Called on the stream's thread, never holding the stream's lock. */
  interface Listener {
    /** A message that answers no operation: {@code renewed}, {@code lost}. */
    void onEvent(SessionResponse response);

    /** An acquire or hold granted after its caller gave up on it (the answer crossed the cancel). */
    void onUnwanted(SessionResponse response, String lockName);

    /** The stream ended, for {@code cause} (words); operations in flight have been failed. */
    void onEnd(String cause);
  }

  /** One operation in flight. */
  static final class Pending {
    final long opId;
    final CompletableFuture<Object> answer = new CompletableFuture<>();
    private final Function<SessionResponse, Object> onAnswer; // runs on the stream's thread, before later messages
    private final String lockName; // an acquire's or hold's: given back if granted after its caller gave up
    private boolean abandoned;

    private Pending(long opId, Function<SessionResponse, Object> onAnswer, String lockName) {
      this.opId = opId;
      this.onAnswer = onAnswer;
      this.lockName = lockName;
    }
  }

  private final String address;
  private final Listener listener;
  private final Object mu = new Object();
  private final Map<Long, Pending> pending = new HashMap<>();
  private ClientCallStreamObserver<SessionRequest> call;
  private long nextOpId = 1;
  private boolean closing;
  private String cutOff; // why this side cancelled the stream
  private String endCause; // set once the stream has ended
  private final CompletableFuture<Void> ended = new CompletableFuture<>();

  /** Opens the stream. Every lease time its answers report counts from now (or later). */
  SessionStream(String address, LockServiceGrpc.LockServiceStub stub, Listener listener) {
    this.address = address;
    this.listener = listener;
    stub.session(new Observer());
  }

  /** Sends one operation; {@code onAnswer} makes its result on the stream's thread. Throws once the session has ended. */
  Pending start(SessionRequest.Builder op, String lockName, Function<SessionResponse, Object> onAnswer) {
    synchronized (mu) {
      if (!openLocked()) {
        throw SessionErrors.ended(address, endCause != null ? endCause : cutOff != null ? cutOff : "it was closed");
      }
      Pending started = new Pending(nextOpId++, onAnswer, lockName);
      pending.put(started.opId, started);
      call.onNext(op.setOpId(started.opId).build());
      return started;
    }
  }

  /** Sends an operation whose answer nobody waits for (a give-back); nothing once the stream has ended or is closing. */
  void send(SessionRequest.Builder op) {
    synchronized (mu) {
      sendLocked(op);
    }
  }

  private void sendLocked(SessionRequest.Builder op) {
    if (openLocked()) {
      call.onNext(op.setOpId(nextOpId++).build());
    }
  }

  /** Whether {@code op} still waits for its answer. */
  boolean inFlight(Pending op) {
    synchronized (mu) {
      return pending.get(op.opId) == op;
    }
  }

  /** False once the stream has ended or is closing. */
  boolean isOpen() {
    synchronized (mu) {
      return openLocked();
    }
  }

  /** Whether the call takes messages: not half-closed, cancelled or ended (grpc-java's ClientCall allows nothing after those). */
  private boolean openLocked() {
    return !closing && cutOff == null && endCause == null;
  }

  /** Waits for the answer to {@code op}; past {@code timeout}, cancels the operation and throws DEADLINE_EXCEEDED. */
  Object await(Pending op, Duration timeout) throws InterruptedException {
    try {
      return op.answer.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      if (abandon(op)) {
        throw SessionErrors.timedOut(address, timeout.toMillis());
      }
      return result(op); // answered as it timed out
    } catch (InterruptedException e) {
      abandon(op);
      throw e;
    } catch (ExecutionException e) {
      throw rethrown(e);
    }
  }

  private static Object result(Pending op) throws InterruptedException {
    try {
      return op.answer.get();
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
  private boolean abandon(Pending op) {
    synchronized (mu) {
      if (pending.get(op.opId) != op) {
        return false;
      }
      op.abandoned = true;
      sendLocked(SessionRequest.newBuilder().setCancel(op.opId));
      return true;
    }
  }

  /**
   * Ends the stream cleanly (SessionClose, then a half-close): the server answers what is in flight,
   * then ends it. Waits up to {@code timeout} for that end, then cancels the stream.
   */
  void close(Duration timeout) {
    synchronized (mu) {
      if (closing) {
        return;
      }
      boolean open = openLocked();
      closing = true;
      if (open) {
        call.onNext(SessionRequest.newBuilder().setOpId(nextOpId++).setClose(SessionClose.getDefaultInstance()).build());
        call.onCompleted();
      }
    }
    try {
      ended.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      cancel("the session's close was interrupted");
    } catch (ExecutionException | TimeoutException e) {
      cancel("the server did not end the session within " + timeout.toMillis() + " ms of its close");
    }
  }

  /** Cancels the stream; its end then reports {@code why} to the session and to every operation in flight. */
  void cancel(String why) {
    synchronized (mu) { // the call is not thread-safe: every use of it holds mu
      if (endCause != null || cutOff != null) {
        return;
      }
      cutOff = why;
      call.cancel(why, null);
    }
  }

  private void onMessage(SessionResponse response) {
    if (response.hasRenewed() || response.hasLost()) {
      listener.onEvent(response);
      return;
    }
    Pending op;
    synchronized (mu) {
      op = pending.remove(response.getOpId());
    }
    if (op == null) {
      return; // a give-back's answer: nobody waits for it
    }
    if (op.abandoned) {
      listener.onUnwanted(response, op.lockName);
    } else if (response.hasError()) {
      op.answer.completeExceptionally(SessionErrors.of(response.getError(), op.lockName));
    } else {
      try {
        op.answer.complete(op.onAnswer.apply(response));
      } catch (RuntimeException e) {
        op.answer.completeExceptionally(e);
      }
    }
  }

  private void onEnd(Status status) {
    List<Pending> failed;
    String cause;
    Status.Code code;
    synchronized (mu) {
      cause = cutOff != null ? cutOff : SessionErrors.cause(status);
      code = status.isOk() || cutOff != null ? Status.Code.UNAVAILABLE : status.getCode();
      endCause = cause;
      failed = new ArrayList<>(pending.values());
      pending.clear();
    }
    // No connection was made (ConnectErrors said why, naming the address): nothing was sent.
    boolean unsent = status.getCode() == Status.Code.UNAVAILABLE && String.valueOf(status.getDescription())
        .startsWith(ConnectErrors.CANNOT_CONNECT);
    for (Pending op : failed) {
      op.answer.completeExceptionally(unsent ? status.asRuntimeException() : SessionErrors.inFlight(address, code, cause));
    }
    listener.onEnd(cause);
    ended.complete(null);
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
