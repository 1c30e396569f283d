package holdfast.fencing;

/** A store's answer: was the token accepted (not older than the newest seen), and the newest after the check. */
public final class FenceCheck {
  private final boolean accepted;
  private final long newest;

  public FenceCheck(boolean accepted, long newest) {
    this.accepted = accepted;
    this.newest = newest;
  }

  public boolean accepted() {
    return accepted;
  }

  /** The newest token recorded for the lock after this check (the request's own when accepted), unsigned. */
  public long newest() {
    return newest;
  }

  /** The refusal text of clients/conformance/fencing.json for {@code fence}. */
  public static String refusalMessage(Fence fence, long newest) {
    return "stale fencing token for lock \"" + fence.lock() + "\": " + fence.tokenText() + " is older than "
        + Long.toUnsignedString(newest) + ", the newest seen";
  }
}
