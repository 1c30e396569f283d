package holdfast;

import java.util.concurrent.TimeUnit;

/**
 * The earliest moment a lease can end, on this side's clock, whatever the network did meanwhile.
 *
 * <p>The server says when, after it received the request, it started a grant or renewal
 * (lease_started_after_ms, its monotonic clock); Redis then counts ttl_ms. The request cannot have been
 * received before it was sent, so the lease ends no earlier than
 *
 * <pre>sentAt + leaseStartedAfterMs + ttlMs - driftMarginMs(leaseStartedAfterMs + ttlMs)</pre>
 *
 * <p>on this side's clock. The same rule as the TypeScript, Python and Go clients: no assumption about
 * how long a message spent on the way, as a confirmation that arrives late only yields a deadline that
 * is already past. clients/conformance/lease-deadline.json holds the cases every SDK's deadline runs.
 */
public final class LeaseDeadline {
  /** Clock-rate allowance, fixed part: the client, server and Redis clocks may disagree this much. */
  public static final double DRIFT_FIXED_MS = 5.0;
  /** Clock-rate allowance, rate part: 100 ppm of the interval counted. */
  public static final double DRIFT_RATE = 1e-4;

  private LeaseDeadline() {}

  /** The clock drift allowance for a lease that ends {@code countedMs} after its request was sent. */
  public static double driftMarginMs(double countedMs) {
    return DRIFT_FIXED_MS + countedMs * DRIFT_RATE;
  }

  /**
   * The conservative end of a lease as a {@link System#nanoTime()} value; {@code sentAtNanos} is a
   * {@code System.nanoTime()} read just before the request was sent.
   */
  public static long of(long sentAtNanos, long leaseStartedAfterMs, long ttlMs) {
    double countedMs = leaseStartedAfterMs + ttlMs;
    double leaseMs = countedMs - driftMarginMs(countedMs);
    return sentAtNanos + (long) (leaseMs * TimeUnit.MILLISECONDS.toNanos(1));
  }

  /**
   * The deadline a lease keeps after a confirmation whose own deadline is {@code confirmed}: the later
   * of the two, as the server never shortens a lease. {@link System#nanoTime()} values compare by
   * their difference (they may wrap).
   */
  static long later(long kept, long confirmed) {
    return confirmed - kept > 0 ? confirmed : kept;
  }

  /**
   * Whether a lease with this deadline is (or may be) lost at {@code now}: from its deadline on it may
   * be someone else's, so a confirmation arriving then, or a look at the clock, finds it lost.
   */
  static boolean passed(long deadline, long now) {
    return now - deadline >= 0;
  }
}
