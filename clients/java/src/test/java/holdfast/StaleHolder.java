package holdfast;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;

/**
 * The holder KleppmannTest pauses, as its own process: holds the lock, reads the counter, checks its
 * lease (still held), prints "read V", and then, when a line arrives on stdin (after the test has
 * frozen and thawed it), writes V+1 with its fence, as a process paused between its check and its write
 * would. Prints "wrote STATUS BODY". Arguments: holdfast address, lock name, resource URL.
 */
public final class StaleHolder {
  private StaleHolder() {}

  public static void main(String[] args) throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    URI resource = URI.create(args[2]);
    HoldOptions options = HoldOptions.builder().ttl(Duration.ofSeconds(3)).waitTimeout(Duration.ofSeconds(10)).build();
    try (HoldfastClient client = HoldfastClient.connect(args[0])) {
      // A busy machine can make this fresh JVM's first request outlast the short lease (the check then
      // says lost): that is not the scenario, so hold again until the read and the check fall in one lease.
      for (int attempt = 1; ; attempt++) {
        try (Lease lease = client.hold(args[1], options)) {
          HttpRequest.Builder read = HttpRequest.newBuilder(resource).GET();
          lease.fenceHeaders(new HashMap<>()).forEach(read::header);
          String value = http.send(read.build(), HttpResponse.BodyHandlers.ofString()).body();
          if (lease.isLost() && attempt < 5) {
            continue;
          }
          lease.check();
          System.out.println("read " + value + " under " + lease.fence().tokenText());
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
          HttpRequest.Builder write = HttpRequest.newBuilder(resource)
              .POST(HttpRequest.BodyPublishers.ofString(Long.toString(Long.parseLong(value) + 1)));
          lease.fenceHeaders(new HashMap<>()).forEach(write::header);
          HttpResponse<String> answer = http.send(write.build(), HttpResponse.BodyHandlers.ofString());
          System.out.println("wrote " + answer.statusCode() + " " + answer.body());
          return;
        }
      }
    }
  }
}
