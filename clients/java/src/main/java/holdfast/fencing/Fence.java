package holdfast.fencing;

import java.util.Objects;

/**
 * A request's fence: the lock it was made under and the holder's fencing token, an unsigned 64-bit
 * number held in a {@code long} (compare with {@link Long#compareUnsigned}; print with
 * {@link Long#toUnsignedString}). It travels as gRPC metadata {@code holdfast-fence-lock} +
 * {@code holdfast-fence-token}, or HTTP headers {@code Holdfast-Fence-Lock} + {@code Holdfast-Fence-Token}.
 */
public final class Fence {
  private final String lock;
  private final long token;

  public Fence(String lock, long token) {
    this.lock = Objects.requireNonNull(lock, "lock");
    if (lock.isEmpty()) {
      throw new IllegalArgumentException("fence lock name is empty");
    }
    this.token = token;
  }

  /** The lock's name, decoded. */
  public String lock() {
    return lock;
  }

  /** The fencing token, unsigned. */
  public long token() {
    return token;
  }

  /** The token as the wire writes it: unsigned decimal. */
  public String tokenText() {
    return Long.toUnsignedString(token);
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof Fence && ((Fence) other).lock.equals(lock) && ((Fence) other).token == token;
  }

  @Override
  public int hashCode() {
    return lock.hashCode() * 31 + Long.hashCode(token);
  }

  @Override
  public String toString() {
    return "fence " + tokenText() + " of lock \"" + lock + "\"";
  }
}
