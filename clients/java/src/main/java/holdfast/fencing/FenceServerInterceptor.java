package holdfast.fencing;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.Objects;

/**
 * The resource side's gRPC guard: every call must carry {@code holdfast-fence-lock} and
 * {@code holdfast-fence-token}. A token older than the newest seen for its lock is refused with
 * FAILED_PRECONDITION; a missing or malformed fence with INVALID_ARGUMENT naming the key; a store that
 * cannot answer with UNAVAILABLE. An accepted call's fence is in {@link #FENCE} for the handler.
 *
 * <pre>{@code
 * Server server = NettyServerBuilder.forPort(port)
 *     .addService(ServerInterceptors.intercept(new MyResource(), new FenceServerInterceptor(store)))
 *     .build().start();
 * }</pre>
 */
public final class FenceServerInterceptor implements ServerInterceptor {
  /** The accepted call's fence, for the handler (e.g. to log which holder wrote). */
  public static final Context.Key<Fence> FENCE = Context.key("holdfast-fence");

  static final Metadata.Key<String> LOCK_KEY = Metadata.Key.of(FenceWire.GRPC_LOCK, Metadata.ASCII_STRING_MARSHALLER);
  static final Metadata.Key<String> TOKEN_KEY = Metadata.Key.of(FenceWire.GRPC_TOKEN, Metadata.ASCII_STRING_MARSHALLER);

  private final FenceStore store;

  public FenceServerInterceptor(FenceStore store) {
    this.store = Objects.requireNonNull(store, "store");
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    Fence fence;
    FenceCheck check;
    try {
      fence = FenceWire.parse(headers.get(LOCK_KEY), headers.get(TOKEN_KEY), FenceWire.GRPC_LOCK, FenceWire.GRPC_TOKEN);
      check = store.check(fence.lock(), fence.token());
    } catch (BadFenceException e) {
      return refuse(call, Status.INVALID_ARGUMENT.withDescription(e.getMessage()));
    } catch (FenceStoreException e) {
      return refuse(call, Status.UNAVAILABLE.withDescription(e.getMessage()));
    }
    if (!check.accepted()) {
      return refuse(call, Status.FAILED_PRECONDITION.withDescription(FenceCheck.refusalMessage(fence, check.newest())));
    }
    return Contexts.interceptCall(Context.current().withValue(FENCE, fence), call, headers, next);
  }

  private static <Q, R> ServerCall.Listener<Q> refuse(ServerCall<Q, R> call, Status status) {
    call.close(status, new Metadata());
    return new ServerCall.Listener<Q>() {};
  }
}
