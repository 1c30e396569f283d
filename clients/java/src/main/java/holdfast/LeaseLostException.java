package holdfast;

import holdfast.v1.Lock.LostReason;

/**
 * The lease is lost: the caller no longer holds the lock. {@link #code()} is
 * {@code LOST_REASON_UNSPECIFIED} when the client decided alone (its local deadline passed, a
 * confirmation came after it, or the stream ended without a lost event).
 */
public final class LeaseLostException extends HoldfastException {
  private static final long serialVersionUID = 1L;
  private final String lockName;
  private final String reason;
  private final transient LostReason code;

  LeaseLostException(String lockName, String reason, LostReason code) {
    super("lock \"" + lockName + "\": " + reason);
    this.lockName = lockName;
    this.reason = reason;
    this.code = code;
  }

  /** The lock whose lease was lost. */
  public String lockName() {
    return lockName;
  }

  /** Why, in words. */
  public String reason() {
    return reason;
  }

  /** Why, as the server's code (LOST_REASON_UNSPECIFIED when the client decided alone). */
  public LostReason code() {
    return code;
  }
}
