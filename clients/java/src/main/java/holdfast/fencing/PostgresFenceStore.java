package holdfast.fencing;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Objects;

/**
 * Newest tokens in PostgreSQL over JDBC (bring your driver, e.g. org.postgresql:postgresql), in the table
 * {@code holdfast_fences(lock text primary key, token numeric(20,0) not null)}, created if missing.
 * {@link #check(Connection, String, long)} runs inside the caller's transaction, so the resource's
 * write and the fence commit or roll back together; {@link #fencedUpdate} is that in one call.
 * Committed rows survive a PostgreSQL crash, so a restart keeps the newest token.
 *
 * <p>The guards' {@link #check(String, long)} fails closed in bounded time: getting the connection and
 * the statement are waited for at most {@link #timeout} (1 s by default; the store runs them on a thread
 * of its own and stops waiting, and sets the statement's query timeout), then the guard answers
 * unavailable. Give your driver or pool its own connect and socket timeouts too (pgjdbc:
 * {@code connectTimeout}, {@code socketTimeout}), so that a call the store stopped waiting for ends.
 */
public final class PostgresFenceStore implements FenceStore {
  static final String CREATE = "CREATE TABLE IF NOT EXISTS holdfast_fences (lock text PRIMARY KEY, token numeric(20,0) NOT NULL)";
  // One statement compares and records; the row stays locked to the end of the transaction.
  static final String RECORD = "INSERT INTO holdfast_fences (lock, token) VALUES (?, ?) ON CONFLICT (lock) "
      + "DO UPDATE SET token = EXCLUDED.token WHERE holdfast_fences.token <= EXCLUDED.token RETURNING token";
  static final String NEWEST = "SELECT token FROM holdfast_fences WHERE lock = ?";

  /** Gives a connection; {@code DataSource::getConnection} fits. */
  @FunctionalInterface
  public interface Connections {
    Connection get() throws SQLException;
  }

  /** How long a standalone check may wait for PostgreSQL unless {@link #open(Connections, Duration)} says otherwise. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(1);
  private static final String BACKEND = "the fence database";

  private final Connections connections;
  private final Duration timeout;

  private PostgresFenceStore(Connections connections, Duration timeout) {
    this.connections = connections;
    this.timeout = timeout;
  }

  /** {@link #open(Connections, Duration)} with the default timeout, 1 s. */
  public static PostgresFenceStore open(Connections connections) throws FenceStoreException {
    return open(connections, DEFAULT_TIMEOUT);
  }

  /**
   * A store that takes a connection per standalone {@link #check(String, long)}; creates the table if missing.
   *
   * @param timeout the longest a standalone check waits for PostgreSQL; past it the guard answers
   *     {@code fence_store_unavailable} (503 / UNAVAILABLE)
   */
  public static PostgresFenceStore open(Connections connections, Duration timeout) throws FenceStoreException {
    Objects.requireNonNull(connections, "connections");
    BoundedCall.positive(timeout);
    try (Connection connection = connections.get(); Statement statement = connection.createStatement()) {
      statement.execute(CREATE);
      if (!connection.getAutoCommit()) {
        connection.commit();
      }
    } catch (SQLException e) {
      throw new FenceStoreException("cannot create the table holdfast_fences: " + e.getMessage(), e);
    }
    return new PostgresFenceStore(connections, timeout);
  }

  /** The bound of a standalone check. */
  public Duration timeout() {
    return timeout;
  }

  /** Checks and records in a transaction of its own (what the guards call), within {@link #timeout()}. */
  @Override
  public FenceCheck check(String lock, long token) throws FenceStoreException {
    int seconds = (int) Math.max(1, (timeout.toMillis() + 999) / 1000);
    return BoundedCall.call(() -> {
      try (Connection connection = connections.get()) {
        connection.setAutoCommit(true);
        return check(connection, lock, token, seconds);
      }
    }, timeout, BACKEND);
  }

  /**
   * Checks and records inside {@code tx}'s transaction: the lock's fence row stays locked until it
   * commits or rolls back, so a write made in the same transaction cannot be overtaken by a stale one.
   * Refusing records nothing.
   */
  public static FenceCheck check(Connection tx, String lock, long token) throws SQLException {
    return check(tx, lock, token, 0);
  }

  private static FenceCheck check(Connection tx, String lock, long token, int querySeconds) throws SQLException {
    BigDecimal offered = new BigDecimal(Long.toUnsignedString(token));
    try (PreparedStatement record = tx.prepareStatement(RECORD)) {
      record.setQueryTimeout(querySeconds);
      record.setString(1, lock);
      record.setBigDecimal(2, offered);
      try (ResultSet rows = record.executeQuery()) {
        if (rows.next()) {
          return new FenceCheck(true, token);
        }
      }
    }
    try (PreparedStatement newest = tx.prepareStatement(NEWEST)) { // refused: the row exists and is locked by us
      newest.setQueryTimeout(querySeconds);
      newest.setString(1, lock);
      try (ResultSet rows = newest.executeQuery()) {
        if (!rows.next()) {
          throw new SQLException("holdfast_fences lost the row of lock \"" + lock + "\" during the check");
        }
        return new FenceCheck(false, Long.parseUnsignedLong(rows.getBigDecimal(1).toBigIntegerExact().toString()));
      }
    }
  }

  /**
   * Runs {@code sql} (an UPDATE/INSERT/DELETE with {@code params}) in {@code tx} only when {@code fence} is
   * not stale, checking and recording the fence in the same transaction; returns the rows changed.
   * Commit {@code tx} afterwards; a stale fence changes nothing and throws.
   *
   * @throws IllegalStateException when {@code tx} is in auto-commit (the check and the write must share a transaction)
   * @throws StaleFenceException when a newer token was seen for the lock
   */
  public static int fencedUpdate(Connection tx, Fence fence, String sql, Object... params)
      throws SQLException, StaleFenceException {
    if (tx.getAutoCommit()) {
      throw new IllegalStateException("fencedUpdate needs a transaction: call setAutoCommit(false) on the connection");
    }
    FenceCheck check = check(tx, fence.lock(), fence.token());
    if (!check.accepted()) {
      throw new StaleFenceException(fence, check.newest());
    }
    try (PreparedStatement write = tx.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        write.setObject(i + 1, params[i]);
      }
      return write.executeUpdate();
    }
  }
}
