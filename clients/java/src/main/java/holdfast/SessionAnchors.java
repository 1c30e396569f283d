package holdfast;

/**
 * The deadline of a lease held under a session (docs/sessions.md): every time the server reports
 * counts from when it received the stream, so the client counts from an anchor it knows was no
 * later than that: the open of the stream, or a ping it sent, whose pong says when the server
 * received it on the same clock.
 *
 * <p>An anchor sent at {@code sentAt} and received {@code receivedAfterMs} into the session vouches
 * for a lease time {@code T >= receivedAfterMs} with {@link LeaseDeadline#of}{@code (sentAt,
 * T - receivedAfterMs, ttlMs)}: only the time since the anchor carries drift. Each anchor gives a
 * valid lower bound, so the latest deadline among the open and the two latest pongs is kept.
 * clients/conformance/session-deadline.json holds the cases.
 */
final class SessionAnchors {
  private final long openedAt; // System.nanoTime() just before the stream started: received at 0
  // The two latest pongs: [0] the older, [1] the newer; count says how many are set.
  private final long[] pingSentAt = new long[2];
  private final long[] receivedAfterMs = new long[2];
  private int count;

  SessionAnchors(long openedAt) {
    this.openedAt = openedAt;
  }

  /** A pong for a ping sent at {@code sentAtNanos} (System.nanoTime(), read before the send). */
  synchronized void pong(long sentAtNanos, long pongReceivedAfterMs) {
    if (count == 2) {
      pingSentAt[0] = pingSentAt[1];
      receivedAfterMs[0] = receivedAfterMs[1];
      count = 1;
    }
    pingSentAt[count] = sentAtNanos;
    receivedAfterMs[count] = pongReceivedAfterMs;
    count++;
  }

  /** How many pongs have been taken. */
  synchronized int pongs() {
    return count;
  }

  /** The latest deadline the anchors give a lease started {@code leaseStartedAfterMs} into the session. */
  synchronized long deadline(long leaseStartedAfterMs, long ttlMs) {
    long best = LeaseDeadline.of(openedAt, leaseStartedAfterMs, ttlMs);
    for (int i = 0; i < count; i++) {
      if (receivedAfterMs[i] <= leaseStartedAfterMs) { // a ping received later says nothing of this lease
        best = LeaseDeadline.later(best, LeaseDeadline.of(pingSentAt[i], leaseStartedAfterMs - receivedAfterMs[i], ttlMs));
      }
    }
    return best;
  }
}
