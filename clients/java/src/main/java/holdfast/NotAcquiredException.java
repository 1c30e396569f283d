package holdfast;

/** The lock was not granted within the wait timeout. */
public final class NotAcquiredException extends HoldfastException {
  private static final long serialVersionUID = 1L;

  NotAcquiredException(String message) {
    super(message);
  }
}
