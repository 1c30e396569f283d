package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.StatusRuntimeException;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Mistakes when connecting, each against a real listener: the exception names the address and says
 * what is wrong. A plaintext holdfast server with its HTTP listener, and a TLS one.
 */
class ConnectErrorsTest {
  private static Path certs;
  private static String httpAddr;
  private static Support.Processes plain;
  private static Support.Processes tls;

  @BeforeAll
  static void start() throws Exception {
    certs = Files.createTempDirectory("holdfast-java-certs");
    Process make = new ProcessBuilder("bash", "test/support/make-certs.sh", certs.resolve("c").toString())
        .directory(Support.repoRoot().toFile()).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    assertEquals(0, make.waitFor());
    httpAddr = "127.0.0.1:" + Support.freePort();
    plain = new Support.Processes("--http-listen", httpAddr);
    tls = new Support.Processes("--tls-cert", cert("server.crt").toString(), "--tls-key", cert("server.key").toString());
  }

  @AfterAll
  static void stop() throws Exception {
    if (plain != null) {
      plain.close();
    }
    if (tls != null) {
      tls.close();
    }
    Support.deleteTree(certs);
  }

  private static File cert(String name) {
    return certs.resolve("c").resolve(name).toFile();
  }

  /** The message of the first call's failure through a client made by connect(). */
  private static String failure(String target, ConnectOptions options) {
    try (HoldfastClient client = HoldfastClient.connect(target, options)) {
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> client.inspect(Support.randomName()));
      return e.getMessage();
    }
  }

  @Test
  void anAddressWithoutAPortIsRefusedAtConnect() {
    for (String target : List.of("127.0.0.1", "localhost", "::1")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HoldfastClient.connect(target));
      assertTrue(e.getMessage().contains("\"" + target + "\" has no port"), e.getMessage());
    }
  }

  @Test
  void anAddressWithASchemeIsRefusedAtConnect() {
    String target = "http://" + plain.addr;
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HoldfastClient.connect(target));
    assertTrue(e.getMessage().contains("\"" + target + "\" has a scheme (http://)"), e.getMessage());
    assertTrue(e.getMessage().contains("e.g. " + plain.addr), e.getMessage());
  }

  @Test
  void theHttpListenerIsNamedAsSuch() {
    String message = failure(httpAddr, ConnectOptions.PLAINTEXT);
    assertTrue(message.contains(httpAddr + " answered in HTTP/1, not gRPC"), message);
    assertTrue(message.contains("--http-listen"), message);
  }

  @Test
  void connectionRefusedNamesTheAddress() throws Exception {
    String nobody = "127.0.0.1:" + Support.freePort();
    String message = failure(nobody, ConnectOptions.PLAINTEXT);
    assertTrue(message.contains("cannot connect to holdfast at " + nobody + ": connection refused"), message);
  }

  @Test
  void tlsClientOnAPlaintextServer() {
    String message = failure(plain.addr, ConnectOptions.builder().caFile(cert("ca.crt")).build());
    assertTrue(message.contains("TLS mismatch with " + plain.addr + ": the client speaks TLS but the server there is plaintext"), message);
  }

  @Test
  void plaintextClientOnATlsServer() {
    String message = failure(tls.addr, ConnectOptions.PLAINTEXT);
    // Closed or reset, as the TLS server happens to end the plaintext hello; both name the address and TLS.
    assertTrue(message.contains("the connection to " + tls.addr + " "), message);
    assertTrue(message.contains("if that server uses TLS, connect with TLS"), message);
  }

  @Test
  void aServerCertificateFromAnotherCa() {
    String message = failure(tls.addr, ConnectOptions.builder().caFile(cert("other-ca.crt")).build());
    assertTrue(message.contains("the TLS handshake with " + tls.addr + " failed: the server's certificate is not signed"), message);
  }

  /** Positive controls: the right address and the right TLS settings work through the same code. */
  @Test
  void theRightSettingsConnect() {
    try (HoldfastClient client = HoldfastClient.connect(plain.addr)) {
      assertEquals(0, client.inspect(Support.randomName()).getHoldersCount());
    }
    try (HoldfastClient client = HoldfastClient.connect(tls.addr, ConnectOptions.builder().caFile(cert("ca.crt")).build())) {
      assertEquals(0, client.inspect(Support.randomName()).getHoldersCount());
    }
  }
}
