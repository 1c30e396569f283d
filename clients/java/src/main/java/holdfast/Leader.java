package holdfast;

import java.util.Objects;

/** The holder of an election's lock: who, what it published, and its fencing token (greater for every new leader). */
public final class Leader {
  private final String owner;
  private final String value;
  private final long fencingToken;

  public Leader(String owner, String value, long fencingToken) {
    this.owner = owner;
    this.value = value;
    this.fencingToken = fencingToken;
  }

  public String owner() {
    return owner;
  }

  public String value() {
    return value;
  }

  public long fencingToken() {
    return fencingToken;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof Leader && ((Leader) other).fencingToken == fencingToken && ((Leader) other).owner.equals(owner)
        && ((Leader) other).value.equals(value);
  }

  @Override
  public int hashCode() {
    return Objects.hash(owner, value, fencingToken);
  }

  @Override
  public String toString() {
    return "Leader{owner=" + owner + ", value=" + value + ", fencingToken=" + fencingToken + "}";
  }
}
