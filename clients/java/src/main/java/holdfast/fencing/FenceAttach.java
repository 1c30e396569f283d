package holdfast.fencing;

import io.grpc.ClientInterceptor;
import io.grpc.Metadata;
import io.grpc.stub.MetadataUtils;
import java.util.Map;

/**
 * Puts a fence on outgoing requests: gRPC metadata, an interceptor, or HTTP headers. A signed fence
 * travels with the unsigned pair beside it ({@code holdfast-fence} + {@code holdfast-fence-lock} +
 * {@code holdfast-fence-token}), so a guard that predates signed fences still reads it.
 */
public final class FenceAttach {
  private FenceAttach() {}

  /** Sets the fence's metadata keys on {@code metadata} (replacing earlier ones) and returns it. */
  public static Metadata metadata(Fence fence, Metadata metadata) {
    metadata.removeAll(FenceServerInterceptor.SIGNED_KEY);
    metadata.removeAll(FenceServerInterceptor.LOCK_KEY);
    metadata.removeAll(FenceServerInterceptor.TOKEN_KEY);
    if (fence.signedFence() != null) {
      metadata.put(FenceServerInterceptor.SIGNED_KEY, fence.signedFence());
    }
    metadata.put(FenceServerInterceptor.LOCK_KEY, FenceWire.encodeLock(fence.lock()));
    metadata.put(FenceServerInterceptor.TOKEN_KEY, fence.tokenText());
    return metadata;
  }

  /** An interceptor that sends {@code fence} on every call: {@code stub.withInterceptors(...)}. */
  public static ClientInterceptor interceptor(Fence fence) {
    return MetadataUtils.newAttachHeadersInterceptor(metadata(fence, new Metadata()));
  }

  /** Puts the fence's HTTP headers into {@code headers} (replacing earlier ones) and returns it. */
  public static <M extends Map<String, String>> M headers(Fence fence, M headers) {
    headers.remove(FenceWire.HTTP_SIGNED);
    if (fence.signedFence() != null) {
      headers.put(FenceWire.HTTP_SIGNED, fence.signedFence());
    }
    headers.put(FenceWire.HTTP_LOCK, FenceWire.encodeLock(fence.lock()));
    headers.put(FenceWire.HTTP_TOKEN, fence.tokenText());
    return headers;
  }
}
