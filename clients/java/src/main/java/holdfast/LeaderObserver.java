package holdfast;

import holdfast.v1.Lock.Holder;
import holdfast.v1.Lock.LockMode;
import holdfast.v1.Lock.WatchRequest;
import holdfast.v1.Lock.WatchResponse;
import holdfast.v1.LockServiceGrpc;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/** Follows an election's leader through Watch; made by {@link HoldfastClient#observe}. Close it to stop. */
public final class LeaderObserver implements AutoCloseable {
  private static final long RETRY_MS = 1000;

  private final LockServiceGrpc.LockServiceStub stub;
  private final String name;
  private final Consumer<Optional<Leader>> listener;
  private final ScheduledExecutorService timer;
  private final Object mu = new Object();
  private Context.CancellableContext watching;
  private boolean closed;
  private boolean told;
  private Optional<Leader> last = Optional.empty();

  LeaderObserver(LockServiceGrpc.LockServiceStub stub, String name, Consumer<Optional<Leader>> listener, ScheduledExecutorService timer) {
    this.stub = stub;
    this.name = name;
    this.listener = listener;
    this.timer = timer;
    watch();
  }

  /** The exclusive holder that still holds (hold count above 0), as a Leader. */
  static Optional<Leader> leaderOf(WatchResponse response) {
    for (Holder h : response.getHoldersList()) {
      if (h.getHoldCount() > 0 && h.getMode() != LockMode.LOCK_MODE_SHARED) {
        return Optional.of(new Leader(h.getOwner(), h.getValue(), h.getFencingToken()));
      }
    }
    return Optional.empty();
  }

  private void watch() {
    Context.CancellableContext context;
    synchronized (mu) {
      if (closed) {
        return;
      }
      context = Context.current().withCancellation();
      watching = context;
    }
    context.run(() -> stub.watch(WatchRequest.newBuilder().setName(name).build(), new StreamObserver<>() {
      @Override
      public void onNext(WatchResponse response) {
        Optional<Leader> leader = leaderOf(response);
        synchronized (mu) {
          if (closed || (told && Objects.equals(leader, last))) {
            return;
          }
          told = true;
          last = leader;
        }
        listener.accept(leader);
      }

      @Override
      public void onError(Throwable t) {
        Status.Code code = Status.fromThrowable(t).getCode();
        if (code == Status.Code.INVALID_ARGUMENT || code == Status.Code.UNAUTHENTICATED || code == Status.Code.PERMISSION_DENIED) {
          return;
        }
        again();
      }

      @Override
      public void onCompleted() {
        again();
      }
    }));
  }

  private void again() {
    synchronized (mu) {
      if (closed) {
        return;
      }
    }
    timer.schedule(this::watch, RETRY_MS, TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() {
    Context.CancellableContext context;
    synchronized (mu) {
      closed = true;
      context = watching;
    }
    if (context != null) {
      context.cancel(null);
    }
  }
}
