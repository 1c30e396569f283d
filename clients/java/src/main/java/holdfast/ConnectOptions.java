package holdfast;

import java.io.File;
import java.util.Objects;

/**
 * How {@link HoldfastClient#connect(String, ConnectOptions)} reaches the server: TLS (trusting the
 * JDK's CAs, or a PEM CA file), a client certificate for mutual TLS, and an API key sent as
 * {@code authorization: Bearer <key>} on every call. {@link #PLAINTEXT} is none of these.
 */
public final class ConnectOptions {
  /** Plaintext, no key: a server on loopback. */
  public static final ConnectOptions PLAINTEXT = builder().build();

  private final boolean tls;
  private final File caFile;
  private final File certFile;
  private final File keyFile;
  private final String serverName;
  private final String apiKey;

  private ConnectOptions(Builder builder) {
    this.tls = builder.tls || builder.caFile != null || builder.certFile != null || builder.serverName != null;
    this.caFile = builder.caFile;
    this.certFile = builder.certFile;
    this.keyFile = builder.keyFile;
    this.serverName = builder.serverName;
    this.apiKey = builder.apiKey;
  }

  public static Builder builder() {
    return new Builder();
  }

  boolean tls() {
    return tls;
  }

  File caFile() {
    return caFile;
  }

  File certFile() {
    return certFile;
  }

  File keyFile() {
    return keyFile;
  }

  String serverName() {
    return serverName;
  }

  String apiKey() {
    return apiKey;
  }

  /** Builds {@link ConnectOptions}; every setter returns the builder. */
  public static final class Builder {
    private boolean tls;
    private File caFile;
    private File certFile;
    private File keyFile;
    private String serverName;
    private String apiKey;

    private Builder() {}

    /** TLS, trusting the JDK's CAs (implied by the other TLS settings). */
    public Builder tls() {
      this.tls = true;
      return this;
    }

    /** TLS, trusting the PEM CA that signed the server's certificate. */
    public Builder caFile(File caFile) {
      this.caFile = Objects.requireNonNull(caFile, "caFile");
      return this;
    }

    /** Mutual TLS: the client's PEM certificate (chain) and its PEM (PKCS#8) private key. */
    public Builder clientCertificate(File certFile, File keyFile) {
      this.certFile = Objects.requireNonNull(certFile, "certFile");
      this.keyFile = Objects.requireNonNull(keyFile, "keyFile");
      return this;
    }

    /** The name the server's certificate must carry, when not the target's host. */
    public Builder serverName(String serverName) {
      this.serverName = Objects.requireNonNull(serverName, "serverName");
      return this;
    }

    /** Sent as {@code authorization: Bearer <key>} on every call (never logged). */
    public Builder apiKey(String apiKey) {
      this.apiKey = Objects.requireNonNull(apiKey, "apiKey");
      return this;
    }

    public ConnectOptions build() {
      return new ConnectOptions(this);
    }
  }
}
