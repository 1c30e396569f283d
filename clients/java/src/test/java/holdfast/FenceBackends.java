package holdfast;

import holdfast.fencing.FenceStore;
import holdfast.fencing.MemoryFenceStore;
import holdfast.fencing.PostgresFenceStore;
import holdfast.fencing.RedisFenceStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/** The fence stores' real backends for a test class: a durable redis-server and a private PostgreSQL. */
final class FenceBackends implements AutoCloseable {
  final Support.RedisServer redis;
  final RespFenceRedis resp;
  final PostgresServer postgres;
  private final Path redisDir;

  private FenceBackends(Path redisDir, Support.RedisServer redis, PostgresServer postgres) {
    this.redisDir = redisDir;
    this.redis = redis;
    this.resp = new RespFenceRedis(redis.port);
    this.postgres = postgres;
  }

  /** A redis-server with appendonly yes and appendfsync always (what RedisFenceStore requires), and PostgreSQL. */
  static FenceBackends start() throws Exception {
    Path dir = Files.createTempDirectory("holdfast-java-redis");
    Support.RedisServer redis = Support.RedisServer.start("--save", "", "--appendonly", "yes", "--appendfsync", "always",
        "--dir", dir.toString());
    try {
      return new FenceBackends(dir, redis, PostgresServer.start());
    } catch (Exception e) {
      redis.close();
      Support.deleteTree(dir);
      throw e;
    }
  }

  /** Each store, by name: memory, redis, postgres. */
  Map<String, FenceStore> stores() throws Exception {
    Map<String, FenceStore> stores = new LinkedHashMap<>();
    stores.put("memory", new MemoryFenceStore());
    stores.put("redis", RedisFenceStore.open(resp, RedisFenceStore.Options.defaults()));
    stores.put("postgres", PostgresFenceStore.open(postgres::connect));
    return stores;
  }

  @Override
  public void close() throws Exception {
    resp.close();
    redis.close();
    postgres.close();
    Support.deleteTree(redisDir);
  }
}
