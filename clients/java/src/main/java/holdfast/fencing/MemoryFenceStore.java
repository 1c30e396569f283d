package holdfast.fencing;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Newest tokens in this process's memory. It forgets them on restart, so it fits only a resource
 * whose own state lives (and dies) in the same process.
 */
public final class MemoryFenceStore implements FenceStore {
  private final ConcurrentMap<String, Long> newest = new ConcurrentHashMap<>();

  @Override
  public FenceCheck check(String lock, long token) {
    // merge() runs atomically per key: the compare and the record are one step.
    long after = newest.merge(lock, token, (seen, offered) -> Long.compareUnsigned(offered, seen) >= 0 ? offered : seen);
    return new FenceCheck(after == token, after);
  }
}
