package holdfast;

import holdfast.fencing.FenceCheck;
import holdfast.fencing.FenceStore;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Runs shuffled tokens through a store from many threads and lists what breaks "the newest never goes down". */
final class FenceStoreChecks {
  private FenceStoreChecks() {}

  private static final class Op {
    final long token;
    final long start;
    final long end;
    final FenceCheck check;

    Op(long token, long start, long end, FenceCheck check) {
      this.token = token;
      this.start = start;
      this.end = end;
      this.check = check;
    }
  }

  /**
   * Checks tokens 1..count, shuffled, from {@code threads} threads at once on one lock, and returns the
   * violations: an accepted token followed (after it finished) by an accepted smaller one, a refusal
   * whose newest is not newer, or a final newest that is not the largest token.
   */
  static List<String> violations(FenceStore store, String lock, int threads, int count) throws Exception {
    List<Long> tokens = new ArrayList<>();
    for (long t = 1; t <= count; t++) {
      tokens.add(t);
    }
    Collections.shuffle(tokens);
    ConcurrentLinkedQueue<Long> todo = new ConcurrentLinkedQueue<>(tokens);
    ConcurrentLinkedQueue<Op> done = new ConcurrentLinkedQueue<>();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> workers = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        workers.add(pool.submit(() -> {
          for (Long token = todo.poll(); token != null; token = todo.poll()) {
            long start = System.nanoTime();
            FenceCheck check = store.check(lock, token);
            done.add(new Op(token, start, System.nanoTime(), check));
          }
          return null;
        }));
      }
      for (Future<?> worker : workers) {
        worker.get(2, TimeUnit.MINUTES);
      }
    } finally {
      pool.shutdownNow();
    }
    List<String> found = new ArrayList<>();
    for (Op b : done) {
      if (b.check.accepted() != (b.check.newest() == b.token) || (!b.check.accepted() && b.check.newest() < b.token)) {
        found.add("token " + b.token + " got accepted=" + b.check.accepted() + " newest=" + b.check.newest());
      }
      for (Op a : done) {
        if (a.check.accepted() && b.check.accepted() && a.end < b.start && b.token < a.token) {
          found.add("token " + b.token + " was accepted after " + a.token + " had been");
        }
      }
    }
    FenceCheck last = store.check(lock, 0);
    if (last.newest() != count) {
      found.add("the newest after all checks is " + last.newest() + ", not " + count);
    }
    return found;
  }
}
