package holdfast.fencing;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Newest tokens in the resource's own Redis, compared and recorded by the script fence-record-1.lua
 * (a byte-identical copy of clients/conformance/fence-record-1.lua) under the key
 * {@code holdfast-fence:{<lock>}}: one key per lock, in one hash slot, so it runs on a Cluster too.
 *
 * <p>The store is as durable as its Redis: {@link #open} refuses a Redis that can lose acknowledged
 * writes (it needs {@code appendonly yes} and {@code appendfsync always}) unless
 * {@link Options#allowLossyRedis} says you accept that a restart may forget the newest token.
 *
 * <p>It fails closed in bounded time: each call to your {@link FenceRedis} is waited for at most
 * {@link Options#timeout} (1 s by default; the store runs it on a thread of its own and stops waiting),
 * then the guard answers unavailable. Give your Redis client its own connect and socket timeouts too, so
 * that a call the store stopped waiting for ends.
 */
public final class RedisFenceStore implements FenceStore {
  /** The script, as shipped in this package. */
  public static final String SCRIPT = loadScript();
  /** How long a lock's record outlives its last accepted request unless {@link Options#keep} says otherwise. */
  public static final Duration DEFAULT_KEEP = Duration.ofDays(30);
  /** How long a check may wait for Redis unless {@link Options#timeout} says otherwise. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(1);
  private static final String BACKEND = "the fence Redis";

  private final FenceRedis redis;
  private final String keepMs;
  private final Duration timeout;

  private RedisFenceStore(FenceRedis redis, Options options) {
    this.redis = redis;
    this.keepMs = Long.toString(options.keep.toMillis());
    this.timeout = options.timeout;
  }

  /**
   * A store on {@code redis}, after checking that Redis keeps what it acknowledges.
   *
   * @throws FenceStoreException naming the setting when Redis may lose acknowledged writes, or CONFIG is disabled
   */
  public static RedisFenceStore open(FenceRedis redis, Options options) throws FenceStoreException {
    Objects.requireNonNull(redis, "redis");
    if (!options.allowLossyRedis) {
      requireSetting(redis, "appendonly", "yes", options.timeout);
      requireSetting(redis, "appendfsync", "always", options.timeout);
    }
    return new RedisFenceStore(redis, options);
  }

  private static void requireSetting(FenceRedis redis, String name, String wanted, Duration timeout)
      throws FenceStoreException {
    String value;
    try {
      value = BoundedCall.call(() -> redis.configGet(name), timeout, BACKEND);
    } catch (FenceStoreException e) {
      throw new FenceStoreException("cannot read the fence Redis's " + name + " setting with CONFIG GET (is CONFIG "
          + "disabled or renamed?): " + e.getMessage() + "; without it the store cannot tell whether a restart keeps "
          + "the newest tokens. Set allowLossyRedis to accept that", e);
    }
    if (!wanted.equalsIgnoreCase(value)) {
      throw new FenceStoreException("the fence Redis has " + name + " " + (value == null ? "unset" : value)
          + ", so a restart can forget acknowledged tokens and let a stale holder through: set " + name + " "
          + wanted + " (appendonly yes and appendfsync always), or set allowLossyRedis to accept that");
    }
  }

  /** The key of {@code lock}'s record. */
  public static String key(String lock) {
    return "holdfast-fence:{" + lock + "}";
  }

  @Override
  public FenceCheck check(String lock, long token) throws FenceStoreException {
    List<?> reply = BoundedCall.call(() -> redis.eval(SCRIPT, key(lock), Long.toUnsignedString(token), keepMs), timeout, BACKEND);
    if (reply == null || reply.size() != 2 || !(reply.get(0) instanceof Number)) {
      throw new FenceStoreException("the fence Redis answered fence-record-1 with " + reply + ", not {accepted, newest}");
    }
    Object newest = reply.get(1);
    String text = newest instanceof byte[] ? new String((byte[]) newest, StandardCharsets.UTF_8) : String.valueOf(newest);
    try {
      return new FenceCheck(((Number) reply.get(0)).longValue() == 1, Long.parseUnsignedLong(text));
    } catch (NumberFormatException e) {
      throw new FenceStoreException("the fence record of lock \"" + lock + "\" holds \"" + text + "\", not a token", e);
    }
  }

  private static String loadScript() {
    try (InputStream in = RedisFenceStore.class.getResourceAsStream("fence-record-1.lua")) {
      if (in == null) {
        throw new IllegalStateException("fence-record-1.lua is missing from the holdfast jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The store's settings. */
  public static final class Options {
    private Duration keep = DEFAULT_KEEP;
    private boolean allowLossyRedis;
    private Duration timeout = DEFAULT_TIMEOUT;

    public static Options defaults() {
      return new Options();
    }

    /**
     * How long a lock's record outlives its last accepted request (default 30 days): the longest a stale
     * holder may be paused and still be caught.
     */
    public Options keep(Duration keep) {
      if (keep.toMillis() <= 0) {
        throw new IllegalArgumentException("keep must be at least 1 ms, got " + keep);
      }
      this.keep = keep;
      return this;
    }

    /**
     * The longest a call to Redis is waited for (default 1 s); past it the guard answers
     * {@code fence_store_unavailable} (503 / UNAVAILABLE).
     */
    public Options timeout(Duration timeout) {
      this.timeout = BoundedCall.positive(timeout);
      return this;
    }

    /** Accept a Redis that may lose acknowledged writes: after its restart a stale token may pass. */
    public Options allowLossyRedis(boolean allow) {
      this.allowLossyRedis = allow;
      return this;
    }
  }
}
