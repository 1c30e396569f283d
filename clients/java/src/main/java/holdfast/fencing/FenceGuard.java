package holdfast.fencing;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * What a guard decides, whatever the transport: the rules of clients/conformance/signed-fence.md, in its
 * order, stopping at the first refusal. {@link FenceFilter} (HTTP) and {@link FenceServerInterceptor}
 * (gRPC) run it; call {@link #admit} yourself to guard another transport.
 *
 * <pre>{@code
 * FenceGuard guard = FenceGuard.builder(store)
 *     .keys(FenceKeyRing.fromUrl(URI.create("http://holdfast:9090/fence-keys")))  // signed fences required
 *     .leaseEndSkew(Duration.ofMillis(500))                                       // optional; off by default
 *     .build();
 * }</pre>
 *
 * <p>Without {@link Builder#keys keys} the guard takes unsigned fences, as before signed fences existed.
 */
public final class FenceGuard {
  /** The three names a fence travels under. */
  public enum Transport {
    HTTP(FenceWire.HTTP_SIGNED, FenceWire.HTTP_LOCK, FenceWire.HTTP_TOKEN),
    GRPC(FenceWire.GRPC_SIGNED, FenceWire.GRPC_LOCK, FenceWire.GRPC_TOKEN);

    final String fence;
    final String lock;
    final String token;

    Transport(String fence, String lock, String token) {
      this.fence = fence;
      this.lock = lock;
      this.token = token;
    }
  }

  /** A request's headers (or metadata): every value sent under {@code name}, an empty list when none. */
  @FunctionalInterface
  public interface Headers {
    List<String> values(String name);
  }

  private final FenceStore store;
  private final FenceKeyRing keys;
  private final String namespace;
  private final boolean acceptUnsigned;
  private final Long skewMs;
  private final LongSupplier clock;

  private FenceGuard(Builder builder) {
    this.store = builder.store;
    this.keys = builder.keys;
    this.namespace = builder.namespace;
    this.acceptUnsigned = builder.keys == null || builder.acceptUnsigned;
    this.skewMs = builder.skewMs;
    this.clock = builder.clock;
  }

  public static Builder builder(FenceStore store) {
    return new Builder(store);
  }

  /**
   * Admits a request or says why not. Steps 1 to 7 never ask the store.
   *
   * @param lock the lock that protects what the request touches. Null is allowed only without keys
   *     (unsigned fences, no binding checked, as before signed fences); with keys it refuses the request
   *     as {@code fence_guard_misconfigured} (500 / INTERNAL): a guard that cannot tell the lock fails closed
   * @return the admitted fence (signed and verified, or unsigned where the guard accepts those)
   * @throws FenceRefusal the first rule the request breaks, with its status and body
   */
  public Fence admit(Transport transport, Headers headers, String lock) throws FenceRefusal {
    return admit(transport, headers, lock, false);
  }

  /** {@code lockRequired}: the caller's lock rule gave null, which fails closed even without keys. */
  Fence admit(Transport transport, Headers headers, String lock, boolean lockRequired) throws FenceRefusal {
    List<String> signedValues = once(headers, transport.fence, "fence");
    List<String> lockValues = once(headers, transport.lock, "lock");
    List<String> tokenValues = once(headers, transport.token, "token");
    Fence fence;
    if (keys != null && !signedValues.isEmpty()) {
      SignedFence parsed;
      try {
        parsed = SignedFence.parse(signedValues.get(0), transport.fence);
      } catch (BadFenceException e) {
        throw FenceRefusal.of(e);
      }
      agree(parsed, lockValues, tokenValues, transport);
      fence = keys.verify(parsed);
      if (!fence.namespace().equals(namespace)) {
        throw new FenceRefusal(FenceRefusal.Reason.ANOTHER_NAMESPACE, "fence for namespace \"" + fence.namespace()
            + "\" refused: this resource is protected in namespace \"" + namespace + "\"",
            "namespace", fence.namespace(), "expected", namespace);
      }
    } else {
      if (keys != null && !acceptUnsigned && lockValues.isEmpty() && tokenValues.isEmpty()) {
        throw FenceRefusal.of(FenceWire.missing("fence", transport.fence));
      }
      try {
        fence = FenceWire.parse(first(lockValues), first(tokenValues), transport.lock, transport.token);
      } catch (BadFenceException e) {
        throw FenceRefusal.of(e);
      }
      if (!acceptUnsigned) {
        throw new FenceRefusal(FenceRefusal.Reason.SIGNED_FENCE_REQUIRED,
            "this resource requires a signed fence (header " + transport.fence + ")", "header", transport.fence);
      }
    }
    if (lock == null && (lockRequired || keys != null)) {
      throw new FenceRefusal(FenceRefusal.Reason.MISCONFIGURED, "the fence guard has no lock for this request (a key "
          + "ring without a lock, or a lock rule that gave none), so no fence can be checked against it");
    }
    if (lock != null && !fence.lock().equals(lock)) {
      throw new FenceRefusal(FenceRefusal.Reason.ANOTHER_LOCK, "fence for lock \"" + fence.lock()
          + "\" refused: this resource is protected by lock \"" + lock + "\"", "lock", fence.lock(), "expected", lock);
    }
    if (skewMs != null && fence.leaseEndMs().isPresent()) {
      long end = fence.leaseEndMs().getAsLong();
      long now = clock.getAsLong();
      // now > end + skew, without overflowing: both unsigned
      if (Long.compareUnsigned(now, end) > 0 && Long.compareUnsigned(now - end, skewMs) > 0) {
        String endText = Long.toUnsignedString(end);
        String nowText = Long.toUnsignedString(now);
        throw new FenceRefusal(FenceRefusal.Reason.LEASE_ENDED, "fence for lock \"" + fence.lock() + "\" (token "
            + fence.tokenText() + ") refused: its lease ended at " + endText + ", now is " + nowText + " (skew allowance "
            + skewMs + " ms)", "lock", fence.lock(), "token", fence.tokenText(), "lease_end_ms", endText, "now_ms", nowText,
            "skew_ms", Long.toString(skewMs));
      }
    }
    FenceCheck check;
    try {
      check = store.check(fence.lock(), fence.token());
    } catch (FenceStoreException e) {
      throw new FenceRefusal(FenceRefusal.Reason.STORE_UNAVAILABLE,
          "fence store unavailable for lock \"" + fence.lock() + "\": " + e.getMessage(), "lock", fence.lock());
    }
    if (!check.accepted()) {
      throw new FenceRefusal(FenceRefusal.Reason.STALE, FenceCheck.refusalMessage(fence, check.newest()),
          "lock", fence.lock(), "token", fence.tokenText(), "newest", Long.toUnsignedString(check.newest()));
    }
    return fence;
  }

  /** The values of {@code name}; more than one is malformed. */
  private static List<String> once(Headers headers, String name, String field) throws FenceRefusal {
    List<String> values = headers.values(name);
    if (values == null) {
      return List.of();
    }
    if (values.size() > 1) {
      throw FenceRefusal.of(FenceWire.malformed(field, name, name + " is sent more than once"));
    }
    return values;
  }

  private static String first(List<String> values) {
    return values.isEmpty() ? null : values.get(0);
  }

  /** The unsigned headers, when sent beside a signed fence, must name its lock and token. */
  private static void agree(SignedFence fence, List<String> lockValues, List<String> tokenValues, Transport transport)
      throws FenceRefusal {
    if (!lockValues.isEmpty() && !fence.lock.equals(FenceWire.decodeLock(lockValues.get(0)))) {
      throw FenceRefusal.of(FenceWire.malformed("lock", transport.lock,
          transport.lock + " does not name the lock of " + transport.fence));
    }
    if (!tokenValues.isEmpty() && !tokenValues.get(0).equals(Long.toUnsignedString(fence.token))) {
      throw FenceRefusal.of(FenceWire.malformed("token", transport.token,
          transport.token + " does not carry the token of " + transport.fence));
    }
  }

  /** A guard's settings; only the store is required. */
  public static final class Builder {
    private final FenceStore store;
    private FenceKeyRing keys;
    private String namespace = "default";
    private boolean acceptUnsigned;
    private Long skewMs;
    private LongSupplier clock = System::currentTimeMillis;

    private Builder(FenceStore store) {
      this.store = Objects.requireNonNull(store, "store");
    }

    /** The public keys signed fences are checked with; with keys, signed fences are required unless {@link #acceptUnsigned}. */
    public Builder keys(FenceKeyRing keys) {
      this.keys = Objects.requireNonNull(keys, "keys");
      return this;
    }

    /** The holdfast namespace the resource is protected in (default {@code default}). */
    public Builder namespace(String namespace) {
      this.namespace = Objects.requireNonNull(namespace, "namespace");
      return this;
    }

    /** Also admit unsigned fences (e.g. during an upgrade); the lock binding still applies to them. */
    public Builder acceptUnsigned(boolean accept) {
      this.acceptUnsigned = accept;
      return this;
    }

    /**
     * Turns on the lease-end check: a signed fence whose stated lease end is more than {@code skew} in
     * the past by this machine's clock is refused, although no newer holder has written. It assumes the
     * server's and this machine's clocks differ by less than {@code skew}. Off by default.
     */
    public Builder leaseEndSkew(Duration skew) {
      if (skew.isNegative()) {
        throw new IllegalArgumentException("the lease-end skew allowance must not be negative, got " + skew);
      }
      this.skewMs = skew.toMillis();
      return this;
    }

    /** The clock of the lease-end check, in Unix ms (default {@link System#currentTimeMillis()}). */
    public Builder clock(LongSupplier nowMs) {
      this.clock = Objects.requireNonNull(nowMs, "nowMs");
      return this;
    }

    public FenceGuard build() {
      return new FenceGuard(this);
    }
  }
}
