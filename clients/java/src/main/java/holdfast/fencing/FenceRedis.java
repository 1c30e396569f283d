package holdfast.fencing;

import java.util.List;

/**
 * The two Redis commands {@link RedisFenceStore} needs, implemented over the Redis client you already
 * use (no Java Redis client ships with Debian, so this package brings none). With Jedis:
 *
 * <pre>{@code
 * FenceRedis redis = new FenceRedis() {
 *   public List<?> eval(String script, String key, String arg1, String arg2) {
 *     try (Jedis j = pool.getResource()) { return (List<?>) j.eval(script, 1, key, arg1, arg2); }
 *   }
 *   public String configGet(String name) {
 *     try (Jedis j = pool.getResource()) { return j.configGet(name).get(name); }
 *   }
 * };
 * }</pre>
 *
 * Errors from the client (connection lost, CONFIG renamed away) may be thrown as they are.
 */
public interface FenceRedis {
  /**
   * {@code EVAL script 1 key arg1 arg2} (or EVALSHA with a fallback to EVAL): the script's reply, a list
   * whose elements are integers ({@link Number}) or bulk strings ({@link String} or {@code byte[]}).
   */
  List<?> eval(String script, String key, String arg1, String arg2) throws Exception;

  /** {@code CONFIG GET name}: the setting's value, or null when Redis has no such setting. */
  String configGet(String name) throws Exception;
}
