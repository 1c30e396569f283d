package holdfast.fencing;

/** A write under a fencing token older than the newest seen for its lock was refused (and changed nothing). */
public final class StaleFenceException extends Exception {
  private static final long serialVersionUID = 1L;

  private final Fence fence;
  private final long newest;

  public StaleFenceException(Fence fence, long newest) {
    super(FenceCheck.refusalMessage(fence, newest));
    this.fence = fence;
    this.newest = newest;
  }

  public Fence fence() {
    return fence;
  }

  /** The newest token seen for the lock, unsigned. */
  public long newest() {
    return newest;
  }
}
