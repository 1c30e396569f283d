package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Leader election against a live server: the scenarios of the TypeScript, Python and Go tests. */
class ElectionTest {
  private static final Duration TTL = Duration.ofMillis(1500);
  private static final Duration MARGIN = Duration.ofSeconds(3);
  private static Support.Processes processes;
  private static String addr;
  private static ManagedChannel channel;
  private static HoldfastClient client;

  @BeforeAll
  static void connect() throws Exception {
    addr = System.getenv("HOLDFAST_ADDR");
    if (addr == null || System.getenv("HOLDFAST_REDIS_URL") == null) {
      processes = new Support.Processes();
      addr = processes.addr;
    }
    channel = Support.readyChannel(addr);
    client = new HoldfastClient(channel);
  }

  @AfterAll
  static void disconnect() throws Exception {
    client.close();
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    if (processes != null) {
      processes.close();
    }
  }

  /** The next leader (not empty) the observer reports, within {@code timeout}. */
  private static Leader nextLeader(LinkedBlockingQueue<Optional<Leader>> leaders, Duration timeout) throws InterruptedException {
    long until = System.nanoTime() + timeout.toNanos();
    while (true) {
      Optional<Leader> leader = leaders.poll(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
      if (leader == null) {
        throw new AssertionError("no leader within " + timeout);
      }
      if (leader.isPresent()) {
        return leader.get();
      }
    }
  }

  @Test
  void resignHandsOverAtOnceAndTokensRise() throws Exception {
    String name = Support.randomName();
    LinkedBlockingQueue<Optional<Leader>> leaders = new LinkedBlockingQueue<>();
    try (LeaderObserver observer = client.observe(name, leaders::add)) {
      assertEquals(Optional.empty(), leaders.poll(10, TimeUnit.SECONDS));
      Leadership first = client.campaign(name, "first:1", TTL);
      Leader seen = nextLeader(leaders, Duration.ofSeconds(5));
      assertEquals("first:1", seen.value());
      assertEquals(first.fencingToken(), seen.fencingToken());
      first.proclaim("first:2");
      assertEquals("first:2", nextLeader(leaders, Duration.ofSeconds(5)).value());

      CompletableFuture<Leadership> second = CompletableFuture.supplyAsync(() -> {
        try {
          return client.campaign(name, "second", TTL);
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
      Support.waitUntil(() -> client.inspect(name).getWaiters() == 1, "the second candidate to queue");
      long resignedAt = System.nanoTime();
      first.close();
      try (Leadership next = second.get(10, TimeUnit.SECONDS)) {
        assertTrue(System.nanoTime() - resignedAt < TTL.toNanos(), "a resign is not left to run out");
        assertTrue(next.fencingToken() > first.fencingToken());
        assertEquals("second", nextLeader(leaders, Duration.ofSeconds(5)).value());
        assertFalse(next.isLost());
      }
      assertFalse(first.isLost(), "a resign is not a loss");
    }
  }

  @Test
  void killedLeaderIsReplacedWithinItsTtl() throws Exception {
    String name = Support.randomName();
    LinkedBlockingQueue<Optional<Leader>> leaders = new LinkedBlockingQueue<>();
    Process child = new ProcessBuilder("node", Support.repoRoot().resolve("test/support/hold-child.js").toString(), addr, name,
        String.valueOf(TTL.toMillis())).redirectErrorStream(true).start();
    try (LeaderObserver observer = client.observe(name, leaders::add)) {
      String line = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8)).readLine();
      Matcher fence = Pattern.compile("\"fencingToken\":\"(\\d+)\"").matcher(line);
      assertTrue(fence.find(), line);
      long killedToken = Long.parseLong(fence.group(1));
      assertEquals(killedToken, nextLeader(leaders, Duration.ofSeconds(5)).fencingToken());
      CompletableFuture<Leadership> next = CompletableFuture.supplyAsync(() -> {
        try {
          return client.campaign(name, "next", TTL);
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
      child.destroyForcibly(); // SIGKILL
      try (Leadership leader = next.get(TTL.plus(MARGIN).toMillis(), TimeUnit.MILLISECONDS)) {
        assertTrue(leader.fencingToken() > killedToken);
        assertEquals("next", nextLeader(leaders, MARGIN).value());
      }
    } finally {
      child.destroyForcibly();
    }
  }
}
