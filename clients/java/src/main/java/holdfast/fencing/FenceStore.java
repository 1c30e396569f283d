package holdfast.fencing;

/**
 * Where a guard keeps the newest fencing token seen per lock. {@link #check} compares and records in
 * one atomic step: of two concurrent checks, never both pass with their tokens out of order.
 */
public interface FenceStore {
  /**
   * Accepts {@code token} (unsigned) when no older than the newest recorded for {@code lock}, and then
   * records it; refuses it otherwise, recording nothing.
   *
   * @throws FenceStoreException when the store cannot answer (the guard then refuses as unavailable)
   */
  FenceCheck check(String lock, long token) throws FenceStoreException;
}
