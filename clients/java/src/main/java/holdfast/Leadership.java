package holdfast;

import java.time.Duration;
import java.util.function.Consumer;

/**
 * Leadership won by {@link HoldfastClient#campaign}: the Hold stream of the election's lock. It is
 * lost when the lease is or may be lost ({@link #onLost}, {@link #check}); closing it resigns, which
 * frees the lock at once so that the next candidate leads. Send {@link #fencingToken()} with every
 * write the leadership allows: downstream services can then refuse a deposed leader's writes.
 */
public final class Leadership implements AutoCloseable {
  /** The longest wait one Hold may ask for; campaign asks again after it. */
  static final Duration CAMPAIGN_WAIT = Duration.ofDays(1);

  private final Lease lease;

  Leadership(Lease lease) {
    this.lease = lease;
  }

  public String name() {
    return lease.name();
  }

  /** The leadership's fence (signed when the server signs), as {@link Lease#fence()}. */
  public holdfast.fencing.Fence fence() {
    return lease.fence();
  }

  /** Greater than every earlier leader's. */
  public long fencingToken() {
    return lease.fencingToken();
  }

  /** Runs {@code listener} once when leadership is lost (on a gRPC or timer thread). */
  public void onLost(Consumer<LeaseLostException> listener) {
    lease.onLost(listener);
  }

  public boolean isLost() {
    return lease.isLost();
  }

  /** Throws {@link LeaseLostException} when leadership is lost: a fencing point before a side effect. */
  public void check() throws LeaseLostException {
    lease.check();
  }

  /** Publishes a new value to observers. */
  public void proclaim(String value) {
    lease.setValue(value);
  }

  /** Resigns: the lock is freed at once. */
  @Override
  public void close() {
    lease.close();
  }
}
