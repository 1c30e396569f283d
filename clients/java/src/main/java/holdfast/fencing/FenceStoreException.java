package holdfast.fencing;

/** A fence store could not answer, or is set up so it cannot keep what it records. */
public final class FenceStoreException extends Exception {
  private static final long serialVersionUID = 1L;

  public FenceStoreException(String message) {
    super(message);
  }

  public FenceStoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
