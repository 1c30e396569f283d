package holdfast;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A private PostgreSQL from test/support/postgres.sh, on a free loopback port, stopped on close(). */
final class PostgresServer implements AutoCloseable {
  private static final Pattern STARTED = Pattern.compile("PGURL=postgres://(\\S+)@(\\S+)/(\\S+) PGPID=(\\d+) PGPORT=(\\d+)");
  final String jdbcUrl;
  /** The postmaster's process id (to stop or kill it in a test). */
  final long pid;
  private final Path dir;
  private final int port;

  private PostgresServer(Path dir, String jdbcUrl, int port, long pid) {
    this.dir = dir;
    this.jdbcUrl = jdbcUrl;
    this.port = port;
    this.pid = pid;
  }

  static PostgresServer start() throws IOException, InterruptedException {
    Path dir = Files.createTempDirectory("holdfast-java-pg").resolve("pg");
    String out = run(List.of("bash", "test/support/postgres.sh", "start", dir.toString()));
    Matcher started = STARTED.matcher(out);
    if (!started.find()) {
      throw new IOException("postgres.sh printed no PGURL: " + out);
    }
    String url = "jdbc:postgresql://" + started.group(2) + "/" + started.group(3) + "?user=" + started.group(1);
    return new PostgresServer(dir, url, Integer.parseInt(started.group(5)), Long.parseLong(started.group(4)));
  }

  Connection connect() throws SQLException {
    return DriverManager.getConnection(jdbcUrl);
  }

  /**
   * Crashes the server (pg_ctl stop -m immediate: no shutdown checkpoint, as after a power cut) and starts
   * it again on the same data directory and port, with the options postgres.sh starts it with.
   */
  void crashAndRestart() throws IOException, InterruptedException {
    Path bin = Path.of(run(List.of("bash", "-c", "ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1")).trim());
    Path data = dir.resolve("data");
    run(asOwner(bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-m", "immediate", "stop"));
    run(asOwner(bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-l", dir.resolve("server.log").toString(),
        "-w", "-t", "30", "-o", "-c listen_addresses=127.0.0.1 -p " + port + " -k " + dir + " -c fsync=on", "start"));
  }

  private static List<String> asOwner(String... command) throws IOException, InterruptedException {
    List<String> line = new ArrayList<>();
    if ("0".equals(run(List.of("id", "-u")).trim())) {
      line.addAll(List.of("runuser", "-u", "postgres", "--")); // PostgreSQL refuses to run as root
    }
    line.addAll(List.of(command));
    return line;
  }

  private static String run(List<String> command) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).directory(Support.repoRoot().toFile()).redirectErrorStream(true).start();
    String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (process.waitFor() != 0) {
      throw new IOException(String.join(" ", command) + " failed: " + out);
    }
    return out;
  }

  @Override
  public void close() throws IOException, InterruptedException {
    run(List.of("bash", "test/support/postgres.sh", "stop", dir.toString()));
    Files.deleteIfExists(dir.getParent());
  }
}
