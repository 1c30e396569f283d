package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import holdfast.fencing.FenceCheck;
import holdfast.fencing.FenceStore;
import holdfast.fencing.MemoryFenceStore;
import holdfast.fencing.PostgresFenceStore;
import holdfast.fencing.RedisFenceStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The three stores against the conformance decisions and many concurrent checks: memory, a real Redis, a real PostgreSQL. */
class FenceStoresTest {
  private static Path redisDir;
  private static Support.RedisServer redis;
  private static RespFenceRedis resp;
  private static PostgresServer postgres;

  @BeforeAll
  static void start() throws Exception {
    redisDir = Files.createTempDirectory("holdfast-java-redis");
    redis = Support.RedisServer.start("--save", "", "--appendonly", "yes", "--appendfsync", "always", "--dir", redisDir.toString());
    resp = new RespFenceRedis(redis.port);
    postgres = PostgresServer.start();
  }

  @AfterAll
  static void stop() throws Exception {
    resp.close();
    redis.close();
    postgres.close();
    Support.deleteTree(redisDir);
  }

  private static Map<String, FenceStore> stores() throws Exception {
    Map<String, FenceStore> stores = new LinkedHashMap<>();
    stores.put("memory", new MemoryFenceStore());
    stores.put("redis", RedisFenceStore.open(resp, RedisFenceStore.Options.defaults()));
    stores.put("postgres", PostgresFenceStore.open(postgres::connect));
    return stores;
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
    Map<String, Long> seen = new ConcurrentHashMap<>();
    FenceStore racy = (lock, token) -> {
      Long newest = seen.get(lock);
      if (newest != null && newest > token) {
        return new FenceCheck(false, newest);
      }
      try {
        Thread.sleep(1); // the window a separate read and write leave open
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      seen.put(lock, token);
      return new FenceCheck(true, token);
    };
    assertFalse(FenceStoreChecks.violations(racy, Support.randomName(), 8, 200).isEmpty());
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
