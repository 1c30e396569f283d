package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import holdfast.fencing.Fence;
import holdfast.fencing.FenceCheck;
import holdfast.fencing.PostgresFenceStore;
import holdfast.fencing.StaleFenceException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The PostgreSQL store inside the resource's own transactions, and across a crash of a real server. */
class PostgresFenceStoreTest {
  private static PostgresServer postgres;
  private static PostgresFenceStore store;

  @BeforeAll
  static void start() throws Exception {
    postgres = PostgresServer.start();
    store = PostgresFenceStore.open(postgres::connect);
    try (Connection connection = postgres.connect(); Statement statement = connection.createStatement()) {
      statement.execute("CREATE TABLE orders (id text PRIMARY KEY, note text NOT NULL)");
    }
  }

  @AfterAll
  static void stop() throws Exception {
    postgres.close();
  }

  private static String note(String id) throws Exception {
    try (Connection connection = postgres.connect(); Statement statement = connection.createStatement();
        ResultSet rows = statement.executeQuery("SELECT note FROM orders WHERE id = '" + id + "'")) {
      return rows.next() ? rows.getString(1) : null;
    }
  }

  private static void write(Fence fence, String id, String note) throws Exception {
    try (Connection tx = postgres.connect()) {
      tx.setAutoCommit(false);
      try {
        PostgresFenceStore.fencedUpdate(tx, fence,
            "INSERT INTO orders (id, note) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET note = EXCLUDED.note", id, note);
        tx.commit();
      } catch (Exception e) {
        tx.rollback();
        throw e;
      }
    }
  }

  @Test
  void aStaleHoldersWriteChangesNothingAndIsReported() throws Exception {
    String lock = Support.randomName();
    write(new Fence(lock, 8), lock, "by 8");
    StaleFenceException stale = assertThrows(StaleFenceException.class, () -> write(new Fence(lock, 7), lock, "by 7"));
    assertEquals(8, stale.newest());
    assertTrue(stale.getMessage().contains("7 is older than 8"), stale.getMessage());
    assertEquals("by 8", note(lock));
    write(new Fence(lock, 8), lock, "by 8 again"); // the current holder writing again
    assertEquals("by 8 again", note(lock));
  }

  @Test
  void aRolledBackTransactionRecordsNoFence() throws Exception {
    String lock = Support.randomName();
    assertTrue(store.check(lock, 5).accepted());
    try (Connection tx = postgres.connect()) {
      tx.setAutoCommit(false);
      assertTrue(PostgresFenceStore.check(tx, lock, 9).accepted());
      tx.rollback();
    }
    FenceCheck after = store.check(lock, 6);
    assertTrue(after.accepted(), "9 was rolled back with its transaction");
  }

  @Test
  void fencedUpdateRefusesAutoCommit() throws Exception {
    try (Connection connection = postgres.connect()) {
      IllegalStateException refused = assertThrows(IllegalStateException.class,
          () -> PostgresFenceStore.fencedUpdate(connection, new Fence("x", 1), "SELECT 1"));
      assertTrue(refused.getMessage().contains("setAutoCommit(false)"), refused.getMessage());
    }
  }

  @Test
  void aCrashAndRestartKeepsTheNewest() throws Exception {
    String lock = Support.randomName();
    assertTrue(store.check(lock, 41).accepted());
    assertTrue(store.check(lock, 42).accepted());
    postgres.crashAndRestart();
    FenceCheck stale = store.check(lock, 41);
    assertFalse(stale.accepted());
    assertEquals(42, stale.newest());
  }
}
