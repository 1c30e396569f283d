package holdfast.fencing;

import java.util.Objects;
import java.util.OptionalLong;

/**
 * A fence: the lock a grant was made under and its fencing token, an unsigned 64-bit number held in a
 * {@code long} (compare with {@link Long#compareUnsigned}; print with {@link Long#toUnsignedString}).
 * A signed fence (clients/conformance/signed-fence.md) also states its namespace, the key that signed it
 * and usually the lease's end. A holder's fence travels as gRPC metadata {@code holdfast-fence} (signed,
 * when the server signs) plus {@code holdfast-fence-lock} + {@code holdfast-fence-token}, or the HTTP
 * headers {@code Holdfast-Fence}, {@code Holdfast-Fence-Lock}, {@code Holdfast-Fence-Token}.
 *
 * <p>The signed text is a bearer credential like the lock's token: {@link #toString()} never shows it.
 */
public final class Fence {
  private final String namespace;
  private final String lock;
  private final long token;
  private final OptionalLong leaseEndMs;
  private final String keyId;
  private final boolean signed;
  private final String text; // the signed fence as sent, or null

  /** An unsigned fence. */
  public Fence(String lock, long token) {
    this("", lock, token, OptionalLong.empty(), "", null);
  }

  /** A signed fence, checked or (on the holder's side) as the server gave it. */
  Fence(SignedFence fence) {
    this(fence.namespace, fence.lock, fence.token,
        fence.leaseEndMs == null ? OptionalLong.empty() : OptionalLong.of(fence.leaseEndMs), fence.keyId, fence.text);
  }

  private Fence(String namespace, String lock, long token, OptionalLong leaseEndMs, String keyId, String text) {
    this.namespace = namespace;
    this.lock = Objects.requireNonNull(lock, "lock");
    if (lock.isEmpty()) {
      throw new IllegalArgumentException("fence lock name is empty");
    }
    this.token = token;
    this.leaseEndMs = leaseEndMs;
    this.keyId = keyId;
    this.signed = text != null;
    this.text = text;
  }

  /**
   * The fence of a grant of {@code lock} with {@code token}, and the server's {@code signedFence} (the
   * grant's {@code signed_fence}; empty when the server signs none): what a holder attaches. A signed
   * fence the holder cannot read is still attached as given (the resource's guard decides).
   */
  public static Fence issued(String lock, long token, String signedFence) {
    if (signedFence == null || signedFence.isEmpty()) {
      return new Fence(lock, token);
    }
    try {
      SignedFence parsed = SignedFence.parse(signedFence, FenceWire.HTTP_SIGNED);
      if (parsed.lock.equals(lock) && parsed.token == token) {
        return new Fence(parsed);
      }
    } catch (BadFenceException e) {
      // attached as given below
    }
    return new Fence("", lock, token, OptionalLong.empty(), "", signedFence);
  }

  /**
   * The fence the guard admitted for the request being handled on this thread: in a gRPC handler behind
   * {@link FenceServerInterceptor} (the call's Context), or in an HTTP handler behind {@link FenceFilter} or
   * {@link FenceServletFilter} (the request's thread); null elsewhere.
   */
  public static Fence current() {
    Fence fence = FenceServerInterceptor.FENCE.get();
    return fence != null ? fence : RequestGuard.CURRENT.get();
  }

  /** The holdfast namespace the fence was signed for; empty for an unsigned fence. */
  public String namespace() {
    return namespace;
  }

  /** The lock's name, decoded. */
  public String lock() {
    return lock;
  }

  /** The fencing token, unsigned. */
  public long token() {
    return token;
  }

  /** The token as the wire writes it: unsigned decimal. */
  public String tokenText() {
    return Long.toUnsignedString(token);
  }

  /**
   * When the grant's lease ends by the server's clock (Unix ms, unsigned), as the signed fence states it;
   * empty for an unsigned fence and for a lock kept by a Session.
   */
  public OptionalLong leaseEndMs() {
    return leaseEndMs;
  }

  /** The id of the key that signed the fence; empty for an unsigned fence. */
  public String keyId() {
    return keyId;
  }

  /** Whether the fence is signed (on a guard's side: its signature verified). */
  public boolean signed() {
    return signed;
  }

  /** The signed fence as it travels (a credential: never log it), or null for an unsigned fence. */
  public String signedFence() {
    return text;
  }

  @Override
  public boolean equals(Object other) {
    if (!(other instanceof Fence)) {
      return false;
    }
    Fence that = (Fence) other;
    return that.lock.equals(lock) && that.token == token && that.namespace.equals(namespace)
        && that.leaseEndMs.equals(leaseEndMs) && that.keyId.equals(keyId) && Objects.equals(that.text, text);
  }

  @Override
  public int hashCode() {
    return lock.hashCode() * 31 + Long.hashCode(token);
  }

  @Override
  public String toString() {
    return (signed ? "signed fence " : "fence ") + tokenText() + " of lock \"" + lock + "\""
        + (namespace.isEmpty() ? "" : " in namespace \"" + namespace + "\"");
  }
}
