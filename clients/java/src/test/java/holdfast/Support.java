package holdfast;

import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Real processes for the tests: a redis-server and a holdfast server on free loopback ports, each
 * killed by PID. HOLDFAST_ADDR and HOLDFAST_REDIS_URL point the tests at a running server instead;
 * tests that must stop their server always start their own.
 */
final class Support {
  static final Duration WAIT = Duration.ofSeconds(10);
  private static final Duration START_TIMEOUT = Duration.ofSeconds(20);
  private static final SecureRandom RANDOM = new SecureRandom();

  private Support() {}

  static String randomName() {
    return String.format("java-%016x", RANDOM.nextLong());
  }

  /** The Redis keys of one lock, as src/engine/keys.ts builds them (names without % { }). */
  static String[] lockKeys(String name) {
    return new String[] {"hf:{" + name + "}:h", "hf:{" + name + "}:q", "hf:{" + name + "}:d"};
  }

  /** Sends one command over RESP and returns the reply line, or a bulk string's value. */
  static String redisCommand(String url, String... args) throws IOException {
    StringBuilder payload = new StringBuilder("*" + args.length + "\r\n");
    for (String arg : args) {
      payload.append('$').append(arg.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(arg).append("\r\n");
    }
    try (Socket socket = redisSocket(url)) {
      OutputStream out = socket.getOutputStream();
      out.write(payload.toString().getBytes(StandardCharsets.UTF_8));
      out.flush();
      BufferedReader reply = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
      String line = reply.readLine();
      if (line.startsWith("$") && !line.equals("$-1")) {
        return reply.readLine();
      }
      return line;
    }
  }

  /** A connection to the redis-server at {@code url}, with a 5 s timeout on every read. */
  private static Socket redisSocket(String url) throws IOException {
    String[] hostPort = url.replaceFirst("^redis://", "").replaceAll("/$", "").split(":");
    Socket socket = new Socket();
    try {
      socket.connect(new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])), 5000);
      socket.setSoTimeout(5000);
      return socket;
    } catch (IOException e) {
      socket.close();
      throw e;
    }
  }

  /** How many times Redis has run {@code command} (INFO commandstats), e.g. "zadd": every lease renewal writes one (a function call may renew many). */
  static long redisCalls(String url, String command) throws IOException {
    try (Socket socket = redisSocket(url)) {
      socket.getOutputStream().write("*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n".getBytes(StandardCharsets.US_ASCII));
      BufferedReader reply = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
      int left = Integer.parseInt(reply.readLine().substring(1)); // a bulk string: $length, then the lines
      String prefix = "cmdstat_" + command + ":calls=";
      long calls = 0;
      while (left > 0) {
        String line = reply.readLine();
        left -= line.length() + 2;
        if (line.startsWith(prefix)) {
          calls = Long.parseLong(line.substring(prefix.length()).split(",")[0]);
        }
      }
      return calls;
    }
  }

  static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }

  /** Polls until {@code condition} holds; the server pushes no event for what the tests wait on. */
  static void waitUntil(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(20);
    }
  }

  /**
   * A channel to a server that grants: the server listens before its backend is up (lock calls are
   * UNAVAILABLE until then), so this watches its health until it says SERVING.
   */
  static ManagedChannel readyChannel(String addr) {
    ManagedChannel channel = ManagedChannelBuilder.forTarget(addr).usePlaintext().build();
    try (Context.CancellableContext watch = Context.current().withCancellation()) {
      watch.run(() -> {
        Iterator<HealthCheckResponse> statuses = HealthGrpc.newBlockingStub(channel).withWaitForReady()
            .withDeadlineAfter(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
            .watch(HealthCheckRequest.getDefaultInstance());
        while (statuses.next().getStatus() != HealthCheckResponse.ServingStatus.SERVING) {
          // the next status change
        }
      });
    } catch (StatusRuntimeException e) {
      channel.shutdownNow();
      throw new IllegalStateException("the holdfast server at " + addr + " did not report SERVING within "
          + START_TIMEOUT.toSeconds() + " s: " + e.getStatus(), e);
    }
    return channel;
  }

  /** Waits until {@code addr} accepts TCP connections (a TLS server, which a plaintext channel cannot ask). */
  static void waitForListener(String addr, Process process) throws IOException, InterruptedException {
    int colon = addr.lastIndexOf(':');
    InetSocketAddress where = new InetSocketAddress(addr.substring(0, colon), Integer.parseInt(addr.substring(colon + 1)));
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    while (true) {
      try (Socket socket = new Socket()) {
        socket.connect(where, 1000);
        return;
      } catch (IOException e) {
        if (!process.isAlive() || System.nanoTime() - deadline > 0) {
          throw new IOException("nothing listens on " + addr + " (server alive: " + process.isAlive() + ")", e);
        }
      }
      Thread.sleep(20);
    }
  }

  /** A redis-server and a holdfast server (with extra serve arguments), killed by PID on close(). */
  static final class Processes implements AutoCloseable {
    final String addr;
    final String redisUrl;
    private final RedisServer redis;
    private final Process server;

    Processes(String... serverArgs) throws IOException, InterruptedException {
      redis = RedisServer.start("--save", "", "--appendonly", "no");
      redisUrl = redis.url;
      Process started = null;
      try {
        Path root = repoRoot();
        Path cli = root.resolve("dist/src/cli.js");
        if (!Files.exists(cli)) {
          throw new IllegalStateException(cli + " is missing: build the server first (npx tsc -p .)");
        }
        // A Redis new to holdfast: its servers grant at once instead of waiting out the quarantine.
        int recorded = new ProcessBuilder("node", cli.toString(), "skip-first-quarantine", "--redis", redisUrl)
            .directory(root.toFile()).redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .redirectError(ProcessBuilder.Redirect.INHERIT).start().waitFor();
        if (recorded != 0) {
          throw new IllegalStateException("holdfast skip-first-quarantine exited with " + recorded);
        }
        addr = "127.0.0.1:" + freePort();
        List<String> command = new ArrayList<>(List.of("node", cli.toString(), "serve", "--listen", addr,
            "--redis", redisUrl, "--log-level", "warn"));
        command.addAll(List.of(serverArgs));
        started = new ProcessBuilder(command).directory(root.toFile()).inheritIO().start();
        if (command.contains("--tls-cert")) {
          waitForListener(addr, started);
        } else {
          readyChannel(addr).shutdownNow();
        }
      } catch (IOException | InterruptedException | RuntimeException e) {
        kill(started);
        redis.close();
        throw e;
      }
      server = started;
    }

    /** Freezes the holdfast server (SIGSTOP): the network goes silent, nothing is released. */
    void pause() throws IOException, InterruptedException {
      signal("STOP");
    }

    void resume() throws IOException, InterruptedException {
      signal("CONT");
    }

    /** SIGKILLs the holdfast server only: its connections end at once, redis-server stays. */
    void killServer() {
      kill(server);
    }

    private void signal(String name) throws IOException, InterruptedException {
      int exit = new ProcessBuilder("kill", "-" + name, String.valueOf(server.pid())).inheritIO().start().waitFor();
      if (exit != 0) {
        throw new IOException("kill -" + name + " " + server.pid() + " exited with " + exit);
      }
    }

    @Override
    public void close() {
      kill(server); // SIGKILL ends a stopped process too
      redis.close();
    }
  }

  /** A redis-server on a free loopback port with extra arguments, SIGKILLed by PID on close(). */
  static final class RedisServer implements AutoCloseable {
    final int port;
    final String url;
    private final Process process;
    private final Path ownDir; // the working directory made for it when the caller gave no --dir

    private RedisServer(int port, Process process, Path ownDir) {
      this.port = port;
      this.url = "redis://127.0.0.1:" + port;
      this.process = process;
      this.ownDir = ownDir;
    }

    static RedisServer start(String... args) throws IOException, InterruptedException {
      return startOn(freePort(), args);
    }

    /**
     * On {@code port} (a restart reuses its predecessor's), answering PING before it returns. Without
     * --dir in {@code args} it works in a new temporary directory (an AOF turned on by CONFIG SET lands
     * there, not in the tree), removed on close().
     */
    static RedisServer startOn(int port, String... args) throws IOException, InterruptedException {
      List<String> command = new ArrayList<>(List.of("redis-server", "--port", String.valueOf(port), "--bind", "127.0.0.1"));
      command.addAll(List.of(args));
      Path ownDir = null;
      if (!command.contains("--dir")) {
        ownDir = Files.createTempDirectory("holdfast-java-redis");
        command.addAll(List.of("--dir", ownDir.toString()));
      }
      RedisServer redis = new RedisServer(port,
          new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start(), ownDir);
      try {
        redis.waitForPing();
      } catch (IOException | InterruptedException | RuntimeException e) {
        redis.close();
        throw e;
      }
      return redis;
    }

    private void waitForPing() throws IOException, InterruptedException {
      long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
      while (true) { // redis-server announces nothing to wait on: ask until it answers
        if (!process.isAlive()) {
          throw new IllegalStateException("redis-server exited with " + process.exitValue());
        }
        try {
          if ("+PONG".equals(redisCommand(url, "PING"))) {
            return;
          }
        } catch (IOException e) {
          if (System.nanoTime() - deadline > 0) {
            throw e;
          }
        }
        Thread.sleep(20);
      }
    }

    /** The redis-server's process id. */
    long pid() {
      return process.pid();
    }

    /** SIGKILL: nothing is flushed beyond what Redis already wrote. */
    @Override
    public void close() {
      kill(process);
      if (ownDir != null) {
        try {
          deleteTree(ownDir);
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }
    }
  }

  /** Sends {@code signal} (e.g. "STOP", "CONT", "KILL") to the process {@code pid} with kill(1). */
  static void signal(String signal, long pid) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).redirectErrorStream(true).start();
    if (kill.waitFor() != 0) {
      throw new IOException("kill -" + signal + " " + pid + " failed: " + new String(kill.getInputStream().readAllBytes(),
          java.nio.charset.StandardCharsets.UTF_8));
    }
  }

  /** SIGKILL by PID, then waits for the process to go. */
  static void kill(Process process) {
    if (process == null) {
      return;
    }
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Removes a temporary directory and what it holds. */
  static void deleteTree(Path dir) throws IOException {
    try (java.util.stream.Stream<Path> paths = Files.walk(dir)) {
      for (Path path : (Iterable<Path>) paths.sorted(java.util.Comparator.reverseOrder())::iterator) {
        Files.delete(path);
      }
    }
  }

  static Path repoRoot() {
    String root = System.getenv("HOLDFAST_REPO_ROOT");
    return root != null ? Paths.get(root) : Paths.get("").toAbsolutePath();
  }
}
