package holdfast.fencing;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A store's call to its backend, waited for at most a bound: the guard fails closed in bounded time
 * whatever client the user built. A call past its bound is interrupted and left to end on its own.
 */
final class BoundedCall {
  private static final AtomicInteger THREADS = new AtomicInteger();
  private static final ExecutorService POOL = Executors.newCachedThreadPool(work -> {
    Thread thread = new Thread(work, "holdfast-fence-store-" + THREADS.incrementAndGet());
    thread.setDaemon(true);
    return thread;
  });

  private BoundedCall() {}

  static Duration positive(Duration timeout) {
    if (timeout.isZero() || timeout.isNegative()) {
      throw new IllegalArgumentException("the fence store's timeout must be positive, got " + timeout);
    }
    return timeout;
  }

  /**
   * Runs {@code work} and waits up to {@code bound} for it.
   *
   * @param backend what answers, for the error ("the fence Redis")
   * @throws FenceStoreException when it fails or does not answer in time, saying which in words
   */
  static <T> T call(Callable<T> work, Duration bound, String backend) throws FenceStoreException {
    Future<T> future = POOL.submit(work);
    try {
      return future.get(bound.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      future.cancel(true);
      throw new FenceStoreException(backend + " did not answer within " + bound.toMillis() + " ms");
    } catch (InterruptedException e) {
      future.cancel(true);
      Thread.currentThread().interrupt();
      throw new FenceStoreException("interrupted while waiting for " + backend);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof FenceStoreException) {
        throw (FenceStoreException) cause;
      }
      throw new FenceStoreException(backend + " failed (" + cause.getClass().getSimpleName()
          + (cause.getMessage() == null ? "" : ": " + cause.getMessage()) + ")", cause);
    }
  }
}
