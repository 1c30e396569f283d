package holdfast;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.IOException;
import java.net.ConnectException;
import java.net.UnknownHostException;
import java.util.regex.Pattern;
import javax.net.ssl.SSLException;

/**
 * Says in words what is wrong when a client cannot talk to its server: the address's form at
 * {@link HoldfastClient#connect}, then, on a failed call, the address and the cause (nothing listens,
 * an HTTP/1 listener, TLS on one side only) instead of grpc-java's "io exception".
 */
final class ConnectErrors {
  private static final Pattern SCHEME = Pattern.compile("^([A-Za-z][A-Za-z0-9+.-]*)://.*");
  private static final Pattern PORT = Pattern.compile("[0-9]{1,5}");
  // "HTTP/" in hex: what an HTTP/1 server answers to gRPC's HTTP/2 preface.
  private static final String HTTP1_REPLY = "485454502f";
  /** How a failure to connect at all begins: nothing was sent. */
  static final String CANNOT_CONNECT = "cannot connect to holdfast at ";

  private ConnectErrors() {}

  /** Refuses a target that is not host:port (grpc-java's dns:/// and unix: targets pass). */
  static void checkTarget(String target) {
    if (target == null || target.isBlank()) {
      throw new IllegalArgumentException("holdfast address is empty: write host:port, e.g. 127.0.0.1:50051");
    }
    java.util.regex.Matcher scheme = SCHEME.matcher(target);
    if (scheme.matches()) {
      String name = scheme.group(1).toLowerCase(java.util.Locale.ROOT);
      if (name.equals("dns") || name.equals("unix")) {
        return;
      }
      throw new IllegalArgumentException("holdfast address \"" + target + "\" has a scheme (" + name + "://): write "
          + "host:port, e.g. " + target.substring(name.length() + 3).replaceAll("/.*", "")
          + (name.equals("https") ? ", and connect with ConnectOptions.builder().tls() for TLS" : ""));
    }
    if (target.startsWith("unix:")) {
      return;
    }
    int colon = target.lastIndexOf(':');
    String host = colon < 0 ? target : target.substring(0, colon);
    String port = colon < 0 ? "" : target.substring(colon + 1);
    if (colon < 0 || (host.contains(":") && !host.endsWith("]"))) {
      throw new IllegalArgumentException("holdfast address \"" + target + "\" has no port: write host:port, e.g. "
          + (target.contains(":") ? "[" + target + "]" : target) + ":50051");
    }
    if (!PORT.matcher(port).matches() || Integer.parseInt(port) < 1 || Integer.parseInt(port) > 65535) {
      throw new IllegalArgumentException("holdfast address \"" + target + "\" has port \"" + port
          + "\": the port must be a number from 1 to 65535");
    }
    if (host.isEmpty()) {
      throw new IllegalArgumentException("holdfast address \"" + target + "\" has no host: write host:port, e.g. 127.0.0.1" + target);
    }
  }

  /** An interceptor that rewrites the description of a call that failed on the connection itself. */
  static ClientInterceptor interceptor(String target, boolean tls) {
    return new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        return new ForwardingClientCall.SimpleForwardingClientCall<Q, R>(next.newCall(method, options)) {
          @Override
          public void start(Listener<R> listener, Metadata headers) {
            super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<R>(listener) {
              @Override
              public void onClose(Status status, Metadata trailers) {
                String why = explain(target, tls, status);
                super.onClose(why == null ? status : status.withDescription(why), trailers);
              }
            }, headers);
          }
        };
      }
    };
  }

  /** The failure in words, naming {@code target}, or null when the call failed for another reason. */
  static String explain(String target, boolean tls, Status status) {
    Status.Code code = status.getCode();
    if (code != Status.Code.UNAVAILABLE && code != Status.Code.INTERNAL && code != Status.Code.UNKNOWN) {
      return null;
    }
    String description = status.getDescription() == null ? "" : status.getDescription();
    for (Throwable cause = status.getCause(); cause != null; cause = cause.getCause()) {
      String message = cause.getMessage() == null ? "" : cause.getMessage();
      if (cause instanceof ConnectException && message.contains("refused")) {
        return CANNOT_CONNECT + target + ": connection refused (nothing listens on that port: "
            + "is the server running, and is this its --listen address?)";
      }
      if (cause instanceof UnknownHostException) {
        return CANNOT_CONNECT + target + ": the host name does not resolve (" + message + ")";
      }
      if (cause instanceof ConnectException) {
        return CANNOT_CONNECT + target + ": " + message;
      }
      if (message.contains(HTTP1_REPLY)) {
        return target + " answered in HTTP/1, not gRPC: it looks like holdfast's --http-listen port (dashboard, "
            + "metrics); connect to the server's --listen port";
      }
      if (cause.getClass().getSimpleName().equals("NotSslRecordException")) {
        return "TLS mismatch with " + target + ": the client speaks TLS but the server there is plaintext "
            + "(connect without TLS, or start the server with --tls-cert and --tls-key)";
      }
      if (cause instanceof SSLException) {
        Throwable root = cause;
        while (root.getCause() != null) {
          root = root.getCause();
        }
        String why = root.getMessage() == null ? root.toString() : root.getMessage();
        return "the TLS handshake with " + target + " failed: "
            + (why.contains("certification path") ? "the server's certificate is not signed by a CA the client trusts ("
                + why + ")" : why);
      }
    }
    // A TLS server may end a plaintext hello with a reset or a broken pipe instead of a close
    // (grpc-java's "io exception"; it varies run to run): the same symptom as "Network closed".
    // A server that went away mid-call looks the same, so these words name both.
    if (!tls && description.contains("Network closed for unknown reason")) {
      return "the connection to " + target + " closed before any answer: " + TLS_HINT;
    }
    Throwable cause = status.getCause();
    if (!tls && cause instanceof IOException && !(cause instanceof SSLException)) {
      return "the connection to " + target + " was cut (" + cause.getMessage() + "): the server went away, or "
          + TLS_HINT;
    }
    return null;
  }

  private static final String TLS_HINT = "if that server uses TLS, connect with TLS "
      + "(ConnectOptions.builder().caFile(...) or tls())";
}
