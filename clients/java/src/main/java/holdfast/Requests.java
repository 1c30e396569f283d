package holdfast;

import holdfast.v1.Lock.AcquireRequest;
import holdfast.v1.Lock.HoldRequest;

/** The requests {@link HoldfastClient} and {@link Session} send, built from {@link HoldOptions} in one place. */
final class Requests {
  private Requests() {}

  static HoldRequest hold(String name, HoldOptions options) {
    return HoldRequest.newBuilder()
        .setName(name)
        .setOwner(options.owner())
        .setTtlMs(options.ttl().toMillis())
        .setWaitTimeoutMs(options.waitTimeout().toMillis())
        .setMode(options.mode())
        .setLimit(options.limit())
        .setMaxHoldMs(options.maxHold().toMillis())
        .setReleaseOnDisconnect(options.releaseOnDisconnect())
        .setValue(options.value())
        .build();
  }

  /** Ignores maxHold and releaseOnDisconnect (Hold only). */
  static AcquireRequest acquire(String name, HoldOptions options) {
    return AcquireRequest.newBuilder()
        .setName(name)
        .setOwner(options.owner())
        .setTtlMs(options.ttl().toMillis())
        .setWaitTimeoutMs(options.waitTimeout().toMillis())
        .setMode(options.mode())
        .setLimit(options.limit())
        .setValue(options.value())
        .build();
  }

  static NotAcquiredException notAcquired(String name, HoldOptions options) {
    return new NotAcquiredException("lock \"" + name + "\" was not acquired within " + options.waitTimeout().toMillis() + " ms");
  }
}
