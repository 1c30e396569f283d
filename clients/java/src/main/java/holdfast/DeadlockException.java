package holdfast;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/**
 * The server ended this call's wait to break a deadlock (docs/deadlocks.md): its owner waited for a
 * lock held by an owner that, through a cycle, waited for a lock this owner holds. {@link #getMessage()}
 * is the server's message unchanged, naming the cycle: each lock, its holder's owner, and what that owner
 * waits for. Nothing else the caller holds was released: give back what you hold, pause a short random
 * while, and try again.
 *
 * <p>Still a {@link StatusRuntimeException} (ABORTED), so code that catches those keeps working; a lost
 * lease stays {@link LeaseLostException}.
 */
public final class DeadlockException extends StatusRuntimeException {
  private static final long serialVersionUID = 1L;
  /** The trailing metadata a unary call or a stream ended by a deadlock carries. */
  static final Metadata.Key<String> REASON = Metadata.Key.of("holdfast-reason", Metadata.ASCII_STRING_MARSHALLER);
  private static final String PREFIX = "deadlock: ";

  private final String lockName;

  private DeadlockException(Status status, Metadata trailers, String lockName) {
    super(status, trailers);
    this.lockName = lockName;
  }

  /** The lock the ended call waited for, or null when the call did not name one lock. */
  public String lockName() {
    return lockName;
  }

  /** The server's message, unchanged: the cycle in words. */
  @Override
  public String getMessage() {
    return getStatus().getDescription();
  }

  /**
   * Whether a failed call or session operation was ended by a deadlock (clients/conformance/deadlock.json):
   * ABORTED, and the trailing metadata {@code holdfast-reason: deadlock} or (a session operation's error,
   * which has no metadata) a message that starts with {@code deadlock: }.
   */
  static boolean isDeadlock(Status status, Metadata trailers) {
    if (status.getCode() != Status.Code.ABORTED) {
      return false;
    }
    String reason = trailers == null ? null : trailers.get(REASON);
    String message = status.getDescription();
    return "deadlock".equals(reason) || (message != null && message.startsWith(PREFIX));
  }

  /**
   * The one rule every call that waits applies to its failure: a {@link DeadlockException} for a deadlock's
   * status, else the status as a plain {@link StatusRuntimeException}.
   */
  static StatusRuntimeException classify(Status status, Metadata trailers, String lockName) {
    if (isDeadlock(status, trailers)) {
      return new DeadlockException(status, trailers, lockName);
    }
    return status.asRuntimeException(trailers);
  }

  /** {@link #classify} for a call's failure, keeping its trailers. */
  static StatusRuntimeException classify(Throwable error, String lockName) {
    return classify(Status.fromThrowable(error), Status.trailersFromThrowable(error), lockName);
  }
}
