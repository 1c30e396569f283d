package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpContext;
import com.sun.net.httpserver.HttpServer;
import holdfast.fencing.FenceFilter;
import holdfast.fencing.MemoryFenceStore;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.HashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Kleppmann's scenario against a real holdfast server: a holder (its own process) reads a counter,
 * is frozen with SIGSTOP past its lease while the next holder increments the counter, then thaws and
 * writes its stale increment. Through {@link FenceFilter} the stale write is refused (409) and no
 * increment is lost; without the filter (negative control) the stale write lands and one is lost.
 */
class KleppmannTest {
  private static Support.Processes processes;
  private static HoldfastClient client;

  @BeforeAll
  static void start() throws Exception {
    // Its own server (the holder's process dials it), noticing a frozen peer within about 2 s.
    processes = new Support.Processes("--keepalive-time-ms", "1000", "--keepalive-timeout-ms", "1000");
    client = HoldfastClient.connect(processes.addr);
  }

  @AfterAll
  static void stop() {
    client.close();
    processes.close();
  }

  /** A counter over HTTP: GET reads it, POST sets it (and counts the writes it took). */
  private static final class Counter implements AutoCloseable {
    final AtomicLong value = new AtomicLong();
    final AtomicInteger writes = new AtomicInteger();
    final HttpServer server;

    Counter(boolean guarded) throws Exception {
      server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      HttpContext context = server.createContext("/counter", exchange -> {
        if (exchange.getRequestMethod().equals("POST")) {
          value.set(Long.parseLong(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8)));
          writes.incrementAndGet();
        }
        byte[] body = Long.toString(value.get()).getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(200, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(body);
        }
      });
      if (guarded) {
        context.getFilters().add(new FenceFilter(new MemoryFenceStore()));
      }
      server.start();
    }

    String url() {
      return "http://127.0.0.1:" + server.getAddress().getPort() + "/counter";
    }

    @Override
    public void close() {
      server.stop(0);
    }
  }

  /** Runs the scenario; returns the stale holder's report ("wrote STATUS BODY"). */
  private static String scenario(Counter counter) throws Exception {
    String name = Support.randomName();
    Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
    // java.class.path: the test classpath (Surefire sets it so in the test JVM).
    Process stale = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"),
        StaleHolder.class.getName(), processes.addr, name, counter.url()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(stale.getInputStream(), StandardCharsets.UTF_8));
      String read = out.readLine();
      assertTrue(read != null && read.startsWith("read 0 under "), "the holder said " + read);
      signal(stale, "STOP");
      // The next holder: granted once the frozen holder's lease has run out on the server.
      HoldOptions options = HoldOptions.builder().ttl(Duration.ofSeconds(10)).waitTimeout(Duration.ofSeconds(60)).build();
      try (Lease next = client.hold(name, options)) {
        HttpClient http = HttpClient.newHttpClient();
        HttpRequest.Builder get = HttpRequest.newBuilder(URI.create(counter.url())).GET();
        next.fenceHeaders(new HashMap<>()).forEach(get::header);
        long seen = Long.parseLong(http.send(get.build(), HttpResponse.BodyHandlers.ofString()).body());
        HttpRequest.Builder write = HttpRequest.newBuilder(URI.create(counter.url()))
            .POST(HttpRequest.BodyPublishers.ofString(Long.toString(seen + 1)));
        next.fenceHeaders(new HashMap<>()).forEach(write::header);
        assertEquals(200, http.send(write.build(), HttpResponse.BodyHandlers.ofString()).statusCode(),
            "the current holder is never refused");
        signal(stale, "CONT");
        stale.getOutputStream().write('\n');
        stale.getOutputStream().flush();
        return out.readLine();
      }
    } finally {
      Support.kill(stale);
    }
  }

  private static void signal(Process process, String name) throws Exception {
    assertEquals(0, new ProcessBuilder("kill", "-" + name, String.valueOf(process.pid())).inheritIO().start().waitFor());
  }

  @Test
  void theGuardRefusesThePausedHoldersWriteAndNoIncrementIsLost() throws Exception {
    try (Counter counter = new Counter(true)) {
      String report = scenario(counter);
      assertTrue(report != null && report.startsWith("wrote 409 ") && report.contains("stale_fencing_token"), report);
      assertEquals(1, counter.value.get(), "the next holder's increment stands");
      assertEquals(1, counter.writes.get(), "the stale write never reached the counter");
    }
  }

  /** Negative control: without the guard the paused holder overwrites, and one increment of two is lost. */
  @Test
  void withoutTheGuardAnIncrementIsLost() throws Exception {
    try (Counter counter = new Counter(false)) {
      String report = scenario(counter);
      assertTrue(report != null && report.startsWith("wrote 200"), report);
      assertEquals(2, counter.writes.get());
      assertEquals(1, counter.value.get(), "two increments, one counted: the lost update");
    }
  }
}
