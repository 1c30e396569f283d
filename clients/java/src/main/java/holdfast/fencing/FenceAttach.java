package holdfast.fencing;

import io.grpc.ClientInterceptor;
import io.grpc.Metadata;
import io.grpc.stub.MetadataUtils;
import java.util.Map;

/** Puts a fence on outgoing requests: gRPC metadata, an interceptor, or HTTP headers. */
public final class FenceAttach {
  private FenceAttach() {}

  /** Sets the two metadata keys on {@code metadata} (replacing earlier ones) and returns it. */
  public static Metadata metadata(Fence fence, Metadata metadata) {
    metadata.removeAll(FenceServerInterceptor.LOCK_KEY);
    metadata.removeAll(FenceServerInterceptor.TOKEN_KEY);
    metadata.put(FenceServerInterceptor.LOCK_KEY, FenceWire.encodeLock(fence.lock()));
    metadata.put(FenceServerInterceptor.TOKEN_KEY, fence.tokenText());
    return metadata;
  }

  /** An interceptor that sends {@code fence} on every call: {@code stub.withInterceptors(...)}. */
  public static ClientInterceptor interceptor(Fence fence) {
    return MetadataUtils.newAttachHeadersInterceptor(metadata(fence, new Metadata()));
  }

  /** Puts the two HTTP headers into {@code headers} and returns it. */
  public static <M extends Map<String, String>> M headers(Fence fence, M headers) {
    headers.put(FenceWire.HTTP_LOCK, FenceWire.encodeLock(fence.lock()));
    headers.put(FenceWire.HTTP_TOKEN, fence.tokenText());
    return headers;
  }
}
