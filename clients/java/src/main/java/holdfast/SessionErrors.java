package holdfast;

import holdfast.v1.Lock.OpError;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/** The errors a {@link Session} raises, in words that name the server and say what may have happened. */
final class SessionErrors {
  private SessionErrors() {}

  /**
   * The error the unary call would have failed with: same code, same message; a {@link DeadlockException}
   * for a deadlock, naming {@code lockName} (an acquire's or hold's, else null).
   */
  static StatusRuntimeException of(OpError error, String lockName) {
    return DeadlockException.classify(Status.fromCodeValue(error.getCode()).withDescription(error.getMessage()), null, lockName);
  }

  /** Why a stream ended, in words: "it was closed", or its status. */
  static String cause(Status status) {
    if (status.isOk()) {
      return "it was closed";
    }
    return status.getCode() + (status.getDescription() == null ? "" : ": " + status.getDescription());
  }

  /** For an operation in flight when the stream ended: it was sent, so it may have happened. */
  static StatusRuntimeException inFlight(String address, Status.Code code, String cause) {
    return Status.fromCode(code).withDescription("the session with holdfast at " + address
        + " ended before this operation was answered (" + cause + "); it may or may not have taken effect")
        .asRuntimeException();
  }

  /** For an operation asked of a session that has ended: nothing was sent. */
  static StatusRuntimeException ended(String address, String cause) {
    return Status.UNAVAILABLE.withDescription("the session with holdfast at " + address + " has ended (" + cause
        + "); nothing was sent: open a new one with HoldfastClient.session()").asRuntimeException();
  }

  /** For an operation not answered within its timeout: it was cancelled, and may or may not have happened. */
  static StatusRuntimeException timedOut(String address, long timeoutMs) {
    return Status.DEADLINE_EXCEEDED.withDescription("holdfast at " + address + " did not answer this session operation within "
        + timeoutMs + " ms; it was cancelled, and may or may not have taken effect").asRuntimeException();
  }

  /** Why the leases of an ended session are lost. */
  static String leasesLost(String address, String cause) {
    return "the session with holdfast at " + address + " ended (" + cause + ")";
  }
}
