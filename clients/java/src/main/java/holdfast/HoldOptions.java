package holdfast;

import holdfast.v1.Lock.LockMode;
import java.time.Duration;
import java.util.Objects;

/**
 * How to take a lock: {@code HoldOptions.builder().ttl(Duration.ofSeconds(10)).waitTimeout(Duration.ofSeconds(5)).build()}.
 * The defaults ask for the server's default lease, no waiting, an exclusive lock and no owner.
 */
public final class HoldOptions {
  /** The server's default lease, no waiting, exclusive. */
  public static final HoldOptions DEFAULT = builder().build();

  private final Duration ttl;
  private final Duration waitTimeout;
  private final String owner;
  private final boolean shared;
  private final int limit;
  private final Duration maxHold;
  private final boolean releaseOnDisconnect;
  private final String value;

  private HoldOptions(Builder builder) {
    ttl = builder.ttl;
    waitTimeout = builder.waitTimeout;
    owner = builder.owner;
    shared = builder.shared;
    limit = builder.limit;
    maxHold = builder.maxHold;
    releaseOnDisconnect = builder.releaseOnDisconnect;
    value = builder.value;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The lease length; zero means the server default. */
  public Duration ttl() {
    return ttl;
  }

  /** How long to queue for the lock; zero means try once. */
  public Duration waitTimeout() {
    return waitTimeout;
  }

  public String owner() {
    return owner;
  }

  public boolean shared() {
    return shared;
  }

  public int limit() {
    return limit;
  }

  public Duration maxHold() {
    return maxHold;
  }

  public boolean releaseOnDisconnect() {
    return releaseOnDisconnect;
  }

  /** The value the grant publishes to watchers; empty for none. */
  public String value() {
    return value;
  }

  LockMode mode() {
    return shared ? LockMode.LOCK_MODE_SHARED : LockMode.LOCK_MODE_EXCLUSIVE;
  }

  /** Builds {@link HoldOptions}; every setter returns the builder. */
  public static final class Builder {
    private Duration ttl = Duration.ZERO;
    private Duration waitTimeout = Duration.ZERO;
    private String owner = "";
    private boolean shared;
    private int limit;
    private Duration maxHold = Duration.ZERO;
    private boolean releaseOnDisconnect;
    private String value = "";

    private Builder() {}

    /** The lease length; zero (the default) means the server default. */
    public Builder ttl(Duration ttl) {
      this.ttl = Objects.requireNonNull(ttl, "ttl");
      return this;
    }

    /** How long to queue for the lock; zero (the default) means try once. */
    public Builder waitTimeout(Duration waitTimeout) {
      this.waitTimeout = Objects.requireNonNull(waitTimeout, "waitTimeout");
      return this;
    }

    /** Names the holder; a non-empty owner re-enters a lock it already holds. */
    public Builder owner(String owner) {
      this.owner = Objects.requireNonNull(owner, "owner");
      return this;
    }

    /** A shared (read) lock instead of an exclusive one. */
    public Builder shared(boolean shared) {
      this.shared = shared;
      return this;
    }

    /** Makes the lock a counting semaphore of that size; 0 or 1 is a plain lock. */
    public Builder limit(int limit) {
      this.limit = limit;
      return this;
    }

    /** Caps how long the server keeps this hold; zero leaves the server's cap (Hold only). */
    public Builder maxHold(Duration maxHold) {
      this.maxHold = Objects.requireNonNull(maxHold, "maxHold");
      return this;
    }

    /**
     * Opts in to the old fast release (Hold only): the server frees the lock the moment the stream
     * ends, however it ends. That gives up the guarantee that a holder that is only paused or cut off
     * never believes it holds a lock someone else has.
     */
    public Builder releaseOnDisconnect(boolean releaseOnDisconnect) {
      this.releaseOnDisconnect = releaseOnDisconnect;
      return this;
    }

    /** A value the grant publishes to watchers (at most 1024 bytes), e.g. a leader's address. */
    public Builder value(String value) {
      this.value = Objects.requireNonNull(value, "value");
      return this;
    }

    public HoldOptions build() {
      return new HoldOptions(this);
    }
  }
}
