package holdfast;

/** A lock was not granted, or a granted lease can no longer be trusted. */
public class HoldfastException extends Exception {
  private static final long serialVersionUID = 1L;

  HoldfastException(String message) {
    super(message);
  }
}
