package holdfast.examples;

import holdfast.ConnectOptions;
import holdfast.HoldOptions;
import holdfast.HoldfastClient;
import holdfast.Lease;
import holdfast.LeaseLostException;
import holdfast.NotAcquiredException;
import io.grpc.StatusRuntimeException;
import java.io.File;
import java.time.Duration;

/**
 * Holds a lock, prints its fencing token, releases it.
 *
 * <pre>clients/java/example.sh --addr 127.0.0.1:50051 [--tls-ca F --tls-cert F --tls-key F] [--api-key K] reports</pre>
 *
 * <p>The API key may come from HOLDFAST_API_KEY instead (arguments show in ps).
 */
public final class HoldExample {
  private HoldExample() {}

  public static void main(String[] args) throws InterruptedException {
    String addr = "127.0.0.1:50051";
    String name = null;
    String cert = null;
    String key = null;
    ConnectOptions.Builder connect = ConnectOptions.builder();
    String apiKey = System.getenv("HOLDFAST_API_KEY");
    for (int i = 0; i < args.length; i++) {
      String value = i + 1 < args.length ? args[i + 1] : null;
      switch (args[i]) {
        case "--addr": addr = value; i++; break;
        case "--tls-ca": connect.caFile(new File(value)); i++; break;
        case "--tls-cert": cert = value; i++; break;
        case "--tls-key": key = value; i++; break;
        case "--api-key": apiKey = value; i++; break;
        default: name = args[i];
      }
    }
    if (name == null || addr == null || (cert == null) != (key == null)) {
      System.err.println("usage: HoldExample [--addr HOST:PORT] [--tls-ca F] [--tls-cert F --tls-key F] [--api-key K] NAME");
      System.exit(2);
    }
    if (cert != null) {
      connect.clientCertificate(new File(cert), new File(key));
    }
    if (apiKey != null && !apiKey.isEmpty()) {
      connect.apiKey(apiKey);
    }
    HoldOptions options = HoldOptions.builder()
        .ttl(Duration.ofSeconds(10))
        .waitTimeout(Duration.ofSeconds(5))
        .owner("java-example")
        .build();
    try (HoldfastClient client = HoldfastClient.connect(addr, connect.build());
        Lease lease = client.hold(name, options)) {
      lease.onLost(lost -> System.err.println("lost: " + lost.getMessage()));
      System.out.println("holding " + name + " with fencing token " + lease.fencingToken());
      lease.check(); // before any side effect: throws LeaseLostException if the lease is gone
    } catch (NotAcquiredException | LeaseLostException e) {
      System.err.println("example: " + e.getMessage());
      System.exit(1);
    } catch (StatusRuntimeException e) {
      System.err.println("example: " + e.getStatus().getCode() + ": " + e.getStatus().getDescription());
      System.exit(1);
    }
    System.out.println("released " + name);
  }
}
