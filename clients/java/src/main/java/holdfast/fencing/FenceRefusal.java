package holdfast.fencing;

import io.grpc.Status;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Why a guard refused a request (clients/conformance/signed-fence.md, "Refusal bodies and messages"):
 * the {@link Reason} gives the HTTP status, the gRPC code and the body's {@code error}; {@link #body()}
 * is the HTTP body ({@code error}, {@code message} and the reason's fields). Nothing in it repeats a
 * signature, and no token beyond the fields listed there.
 */
public final class FenceRefusal extends Exception {
  private static final long serialVersionUID = 1L;

  /** The refusals, in the order a guard checks them. */
  public enum Reason {
    MISSING("missing_fence", 400, Status.Code.INVALID_ARGUMENT),
    MALFORMED("malformed_fence", 400, Status.Code.INVALID_ARGUMENT),
    SIGNED_FENCE_REQUIRED("signed_fence_required", 403, Status.Code.PERMISSION_DENIED),
    UNKNOWN_KEY("unknown_fence_key", 403, Status.Code.PERMISSION_DENIED),
    BAD_SIGNATURE("bad_fence_signature", 403, Status.Code.PERMISSION_DENIED),
    ANOTHER_NAMESPACE("fence_for_another_namespace", 403, Status.Code.PERMISSION_DENIED),
    ANOTHER_LOCK("fence_for_another_lock", 403, Status.Code.PERMISSION_DENIED),
    LEASE_ENDED("fence_lease_ended", 409, Status.Code.FAILED_PRECONDITION),
    STALE("stale_fencing_token", 409, Status.Code.FAILED_PRECONDITION),
    STORE_UNAVAILABLE("fence_store_unavailable", 503, Status.Code.UNAVAILABLE),
    /** The guard cannot tell the resource's lock (a key ring without a lock, or a lock rule that gave none): it fails closed. */
    MISCONFIGURED("fence_guard_misconfigured", 500, Status.Code.INTERNAL);

    private final String error;
    private final int httpStatus;
    private final Status.Code grpcCode;

    Reason(String error, int httpStatus, Status.Code grpcCode) {
      this.error = error;
      this.httpStatus = httpStatus;
      this.grpcCode = grpcCode;
    }

    /** The HTTP body's {@code error}. */
    public String error() {
      return error;
    }

    public int httpStatus() {
      return httpStatus;
    }

    public Status.Code grpcCode() {
      return grpcCode;
    }
  }

  private final Reason reason;
  private final Map<String, String> body;

  /** {@code fields}: name, value pairs after {@code error} and {@code message}. */
  FenceRefusal(Reason reason, String message, String... fields) {
    super(message);
    this.reason = reason;
    Map<String, String> all = new LinkedHashMap<>();
    all.put("error", reason.error());
    all.put("message", message);
    for (int i = 0; i + 1 < fields.length; i += 2) {
      all.put(fields[i], fields[i + 1]);
    }
    this.body = Collections.unmodifiableMap(all);
  }

  static FenceRefusal of(BadFenceException bad) {
    return new FenceRefusal(bad.kind() == BadFenceException.Kind.MISSING ? Reason.MISSING : Reason.MALFORMED,
        bad.getMessage(), "field", bad.field(), "header", bad.header());
  }

  public Reason reason() {
    return reason;
  }

  /** The HTTP refusal's JSON body, in order: {@code error}, {@code message}, then the reason's fields. */
  public Map<String, String> body() {
    return body;
  }

  /** The gRPC status of this refusal, its description the message. */
  public Status status() {
    return Status.fromCode(reason.grpcCode()).withDescription(getMessage());
  }
}
