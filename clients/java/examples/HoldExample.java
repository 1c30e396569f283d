package holdfast.examples;

import holdfast.HoldOptions;
import holdfast.HoldfastClient;
import holdfast.Lease;
import holdfast.LeaseLostException;
import holdfast.NotAcquiredException;
import java.time.Duration;

/**
 * Holds a lock, prints its fencing token, releases it.
 *
 * <pre>clients/java/java.sh example --addr 127.0.0.1:50051 reports</pre>
 */
public final class HoldExample {
  private HoldExample() {}

  public static void main(String[] args) throws InterruptedException {
    String addr = "127.0.0.1:50051";
    String name = null;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--addr") && i + 1 < args.length) {
        addr = args[++i];
      } else {
        name = args[i];
      }
    }
    if (name == null) {
      System.err.println("usage: HoldExample [--addr HOST:PORT] NAME");
      System.exit(2);
    }
    HoldOptions options = HoldOptions.builder()
        .ttl(Duration.ofSeconds(10))
        .waitTimeout(Duration.ofSeconds(5))
        .owner("java-example")
        .build();
    try (HoldfastClient client = HoldfastClient.connect(addr);
        Lease lease = client.hold(name, options)) {
      lease.onLost(lost -> System.err.println("lost: " + lost.getMessage()));
      System.out.println("holding " + name + " with fencing token " + lease.fencingToken());
      lease.check(); // before any side effect: throws LeaseLostException if the lease is gone
    } catch (NotAcquiredException | LeaseLostException e) {
      System.err.println("example: " + e.getMessage());
      System.exit(1);
    }
    System.out.println("released " + name);
  }
}
