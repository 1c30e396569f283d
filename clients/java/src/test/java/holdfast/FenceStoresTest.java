package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import holdfast.fencing.FenceCheck;
import holdfast.fencing.FenceStore;
import holdfast.fencing.RedisFenceStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The three stores against the conformance decisions and many concurrent checks: memory, a real Redis, a real PostgreSQL. */
class FenceStoresTest {
  private static FenceBackends backends;
  private static RespFenceRedis resp;

  @BeforeAll
  static void start() throws Exception {
    backends = FenceBackends.start();
    resp = backends.resp;
  }

  @AfterAll
  static void stop() throws Exception {
    backends.close();
  }

  private static Map<String, FenceStore> stores() throws Exception {
    return backends.stores();
  }

  @Test
  void everyStoreDecidesTheConformanceCases() throws Exception {
    for (Map.Entry<String, FenceStore> store : stores().entrySet()) {
      for (JsonElement each : FencingConformanceTest.cases().getAsJsonArray("decide")) {
        JsonObject c = each.getAsJsonObject();
        String what = store.getKey() + ": " + c.get("name").getAsString();
        String lock = Support.randomName() + "/é";
        String newest = FencingConformanceTest.text(c, "newest");
        if (newest != null) {
          assertTrue(store.getValue().check(lock, Long.parseUnsignedLong(newest)).accepted(), what);
        }
        FenceCheck check = store.getValue().check(lock, Long.parseUnsignedLong(c.get("token").getAsString()));
        assertEquals(c.get("accepted").getAsBoolean(), check.accepted(), what);
        assertEquals(c.get("newestAfter").getAsString(), Long.toUnsignedString(check.newest()), what);
      }
    }
  }

  @Test
  void everyStoreIsAtomicUnderConcurrentChecks() throws Exception {
    for (Map.Entry<String, FenceStore> store : stores().entrySet()) {
      List<String> violations = FenceStoreChecks.violations(store.getValue(), Support.randomName(), 8, 200);
      assertEquals(List.of(), violations, store.getKey());
    }
  }

  /** Negative control: a store that reads, then writes, loses the newest, and the checker says so. */
  @Test
  void theCheckerCatchesACheckThenActStore() throws Exception {
    assertFalse(FenceStoreChecks.violations(new CheckThenAct(), Support.randomName(), 8, 200).isEmpty());
  }

  /**
   * Reads, decides, then writes. Left to the scheduler, two checks fall between each other's read
   * and write only now and then, and on a busy machine a whole run can pass without it. Here they
   * always do: a check that would accept waits after its read for the next such check to have read
   * too (up to a second), then the larger token writes, the smaller writes over it, and only then
   * does the larger return.
   */
  private static final class CheckThenAct implements FenceStore {
    private static final long MEET_MS = 1000;
    private final Map<String, Long> seen = new ConcurrentHashMap<>();
    private final Object mutex = new Object();
    private Meeting open; // the first reader of the next pair waits in it

    private static final class Meeting {
      final List<Long> tokens = new ArrayList<>();
      final CountDownLatch bothRead = new CountDownLatch(1);
      final CountDownLatch largerWritten = new CountDownLatch(1);
      final CountDownLatch smallerWritten = new CountDownLatch(1);
    }

    @Override
    public FenceCheck check(String lock, long token) {
      Long newest = seen.get(lock);
      if (newest != null && newest > token) {
        return new FenceCheck(false, newest);
      }
      Meeting meeting = meet(token);
      long larger;
      int size;
      synchronized (mutex) {
        larger = Collections.max(meeting.tokens);
        size = meeting.tokens.size();
      }
      if (token != larger) {
        await(meeting.largerWritten);
      }
      seen.put(lock, token);
      if (token == larger) {
        meeting.largerWritten.countDown();
        if (size > 1) {
          await(meeting.smallerWritten);
        }
      } else {
        meeting.smallerWritten.countDown();
      }
      return new FenceCheck(true, token);
    }

    private Meeting meet(long token) {
      Meeting meeting;
      synchronized (mutex) {
        if (open != null) { // the second reader: both have read now
          meeting = open;
          open = null;
          meeting.tokens.add(token);
          meeting.bothRead.countDown();
          return meeting;
        }
        meeting = new Meeting();
        meeting.tokens.add(token);
        open = meeting;
      }
      if (!await(meeting.bothRead)) {
        synchronized (mutex) {
          if (open == meeting) {
            open = null;
          }
        }
      }
      return meeting;
    }

    private static boolean await(CountDownLatch latch) {
      try {
        return latch.await(MEET_MS, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
  }

  @Test
  void redisRecordOutlivesItsLastRequestByKeep() throws Exception {
    RedisFenceStore store = RedisFenceStore.open(resp, RedisFenceStore.Options.defaults().keep(java.time.Duration.ofSeconds(60)));
    String lock = Support.randomName();
    assertTrue(store.check(lock, 3).accepted());
    long pttl = (Long) resp.command("PTTL", RedisFenceStore.key(lock));
    assertTrue(pttl > 30_000 && pttl <= 60_000, "PTTL " + pttl);
    assertEquals("3", resp.command("GET", "holdfast-fence:{" + lock + "}"));
  }

  @Test
  void redisStoreRefusesARedisThatCanLoseWrites() throws Exception {
    try (Support.RedisServer lossy = Support.RedisServer.start("--save", "", "--appendonly", "no");
        RespFenceRedis client = new RespFenceRedis(lossy.port)) {
      Exception refused = assertThrows(Exception.class, () -> RedisFenceStore.open(client, RedisFenceStore.Options.defaults()));
      assertTrue(refused.getMessage().contains("appendonly no"), refused.getMessage());
      client.command("CONFIG", "SET", "appendonly", "yes");
      refused = assertThrows(Exception.class, () -> RedisFenceStore.open(client, RedisFenceStore.Options.defaults()));
      assertTrue(refused.getMessage().contains("appendfsync everysec"), refused.getMessage());
      RedisFenceStore store = RedisFenceStore.open(client, RedisFenceStore.Options.defaults().allowLossyRedis(true));
      assertTrue(store.check(Support.randomName(), 1).accepted());
    }
  }

  @Test
  void redisStoreSaysWhenConfigIsDisabled() throws Exception {
    try (Support.RedisServer noConfig = Support.RedisServer.start("--save", "", "--rename-command", "CONFIG", "\"\"");
        RespFenceRedis client = new RespFenceRedis(noConfig.port)) {
      Exception refused = assertThrows(Exception.class, () -> RedisFenceStore.open(client, RedisFenceStore.Options.defaults()));
      assertTrue(refused.getMessage().contains("CONFIG"), refused.getMessage());
      assertTrue(refused.getMessage().contains("allowLossyRedis"), refused.getMessage());
    }
  }

  @Test
  void redisKilledAndRestartedKeepsTheNewest() throws Exception {
    Path dir = Files.createTempDirectory("holdfast-java-redis-restart");
    String[] args = {"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--dir", dir.toString()};
    String lock = Support.randomName();
    Support.RedisServer first = Support.RedisServer.start(args);
    try (RespFenceRedis client = new RespFenceRedis(first.port)) {
      assertTrue(RedisFenceStore.open(client, RedisFenceStore.Options.defaults()).check(lock, 7).accepted());
    } finally {
      first.close(); // SIGKILL
    }
    try (Support.RedisServer again = Support.RedisServer.startOn(first.port, args);
        RespFenceRedis client = new RespFenceRedis(again.port)) {
      FenceCheck stale = RedisFenceStore.open(client, RedisFenceStore.Options.defaults()).check(lock, 6);
      assertFalse(stale.accepted());
      assertEquals(7, stale.newest());
    } finally {
      Support.deleteTree(dir);
    }
  }

  /** Negative control of the restart: without appendonly the SIGKILL loses the record (what the store refuses). */
  @Test
  void redisWithoutAppendonlyForgetsOnRestart() throws Exception {
    Path dir = Files.createTempDirectory("holdfast-java-redis-lossy");
    String[] args = {"--save", "", "--appendonly", "no", "--dir", dir.toString()};
    String lock = Support.randomName();
    Support.RedisServer first = Support.RedisServer.start(args);
    try (RespFenceRedis client = new RespFenceRedis(first.port)) {
      RedisFenceStore.open(client, RedisFenceStore.Options.defaults().allowLossyRedis(true)).check(lock, 7);
    } finally {
      first.close();
    }
    try (Support.RedisServer again = Support.RedisServer.startOn(first.port, args);
        RespFenceRedis client = new RespFenceRedis(again.port)) {
      assertTrue(RedisFenceStore.open(client, RedisFenceStore.Options.defaults().allowLossyRedis(true)).check(lock, 6).accepted());
    } finally {
      Support.deleteTree(dir);
    }
  }

}
