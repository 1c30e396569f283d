package holdfast;

import holdfast.v1.Lock.AcquireRequest;
import holdfast.v1.Lock.AcquireResponse;
import holdfast.v1.Lock.HoldRequest;
import holdfast.v1.Lock.InspectRequest;
import holdfast.v1.Lock.InspectResponse;
import holdfast.v1.Lock.ReleaseRequest;
import holdfast.v1.LockServiceGrpc;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The Java client of the holdfast lock server.
 *
 * <pre>{@code
 * try (HoldfastClient client = HoldfastClient.connect("127.0.0.1:50051");
 *     Lease lease = client.hold("orders/42", HoldOptions.builder().ttl(Duration.ofSeconds(10)).build())) {
 *   lease.check(); // before a side effect: throws LeaseLostException once the lease is gone
 *   writeOrder(lease.fencingToken());
 * }
 * }</pre>
 *
 * <p>{@link #hold} keeps the lock through the Hold stream (the server renews it) with a local deadline;
 * {@link #acquire}, {@link #release} and {@link #inspect} are one-shot calls for callers that manage a
 * lease themselves; {@link #session()} holds many locks under one stream with one heartbeat.
 * Thread-safe; one client serves any number of leases and sessions.
 */
public final class HoldfastClient implements AutoCloseable {
  /** Extra time to wait for the server's own answer after the wait timeout has passed. */
  static final Duration ACQUIRE_GRACE = Duration.ofSeconds(2);
  /** The deadline of Release and Inspect. */
  static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);

  private final String address; // for errors: the target, or the channel's authority
  private final ManagedChannel ownedChannel;
  private final LockServiceGrpc.LockServiceStub stub;
  private final LockServiceGrpc.LockServiceBlockingStub blocking;
  private final ScheduledExecutorService timer;

  /** A client on {@code channel}, which stays the caller's to configure (TLS, API key) and shut down. */
  public HoldfastClient(Channel channel) {
    this(channel, null, Objects.requireNonNull(channel, "channel").authority());
  }

  private HoldfastClient(Channel channel, ManagedChannel owned, String address) {
    Objects.requireNonNull(channel, "channel");
    this.address = address;
    this.ownedChannel = owned;
    this.stub = LockServiceGrpc.newStub(channel);
    this.blocking = LockServiceGrpc.newBlockingStub(channel);
    this.timer = Executors.newSingleThreadScheduledExecutor(task -> {
      Thread thread = new Thread(task, "holdfast-lease-deadline");
      thread.setDaemon(true);
      return thread;
    });
  }

  /** A client with its own plaintext channel to {@code target} (host:port), shut down by {@link #close()}. */
  public static HoldfastClient connect(String target) {
    return connect(target, ConnectOptions.PLAINTEXT);
  }

  /**
   * A client with its own channel to {@code target} (host:port), with TLS, a client certificate
   * and an API key as {@code options} say; shut down by {@link #close()}.
   *
   * <p>The channel connects on the first call; a call that cannot reach the server fails with a
   * {@link io.grpc.StatusRuntimeException} whose message names {@code target} and the cause in words.
   *
   * @throws IllegalArgumentException when {@code target} is not host:port (no port, or a scheme such as http://)
   * @throws UncheckedIOException when a certificate or key file cannot be read
   */
  public static HoldfastClient connect(String target, ConnectOptions options) {
    ConnectErrors.checkTarget(target);
    NettyChannelBuilder builder = NettyChannelBuilder.forTarget(target);
    if (options.tls()) {
      try {
        SslContextBuilder ssl = GrpcSslContexts.forClient();
        if (options.caFile() != null) {
          ssl.trustManager(options.caFile());
        }
        if (options.certFile() != null) {
          ssl.keyManager(options.certFile(), options.keyFile());
        }
        builder.sslContext(ssl.build());
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read the TLS files: " + e.getMessage(), e);
      }
      if (options.serverName() != null) {
        builder.overrideAuthority(options.serverName());
      }
    } else {
      builder.usePlaintext();
    }
    ManagedChannel channel = builder.build();
    // Failed calls name the address and say why (refused, HTTP/1 listener, TLS on one side only).
    Channel calls = ClientInterceptors.intercept(channel, ConnectErrors.interceptor(target, options.tls()));
    if (options.apiKey() != null) {
      // An interceptor, not call credentials: these also go over plaintext to a server on loopback.
      Metadata headers = new Metadata();
      headers.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + options.apiKey());
      calls = ClientInterceptors.intercept(calls, MetadataUtils.newAttachHeadersInterceptor(headers));
    }
    return new HoldfastClient(calls, channel, target);
  }

  /**
   * Holds {@code name} through the Hold stream until the returned lease is closed.
   *
   * @throws NotAcquiredException when the lock is not granted within the wait timeout
   * @throws LeaseLostException when the grant arrives after its lease could have ended
   * @throws DeadlockException when the server ended the wait to break a deadlock (the message names the cycle)
   * @throws io.grpc.StatusRuntimeException when the server refuses the request (bad name, ttl, ...)
   */
  public Lease hold(String name, HoldOptions options)
      throws NotAcquiredException, LeaseLostException, InterruptedException {
    HoldRequest request = Requests.hold(name, options);
    Lease lease = new Lease(name, request, stub, blocking, timer);
    lease.open(options.waitTimeout().plus(ACQUIRE_GRACE).toNanos());
    return lease;
  }

  /**
   * Opens a session: one stream that holds many locks with one heartbeat, and carries acquire, release
   * and inspect as one message each way. See {@link Session}; close it (try-with-resources) to release
   * every lock held under it at once.
   */
  public Session session() {
    return session(Session.Timing.DEFAULT);
  }

  Session session(Session.Timing timing) {
    return new Session(address, stub, blocking, timer, timing);
  }

  /**
   * Acquires {@code name} once, with no renewals: mind the ttl. Nothing keeps a local deadline for this
   * grant; count its lease from a {@code System.nanoTime()} read before the call, with
   * {@link LeaseDeadline#of}. Ignores maxHold and releaseOnDisconnect (Hold only).
   *
   * @throws NotAcquiredException when the lock is not granted within the wait timeout
   * @throws DeadlockException when the server ended the wait to break a deadlock (the message names the cycle)
   */
  public AcquireResponse acquire(String name, HoldOptions options) throws NotAcquiredException {
    AcquireRequest request = Requests.acquire(name, options);
    AcquireResponse grant;
    try {
      grant = blocking
          .withDeadlineAfter(options.waitTimeout().plus(ACQUIRE_GRACE).toMillis(), TimeUnit.MILLISECONDS)
          .acquire(request);
    } catch (StatusRuntimeException e) {
      throw DeadlockException.classify(e, name);
    }
    if (!grant.getAcquired()) {
      throw Requests.notAcquired(name, options);
    }
    return grant;
  }

  /** Releases one hold of a grant; true when the lock was freed. A token that holds nothing is NOT_FOUND. */
  public boolean release(String name, String token) {
    return release(name, token, "");
  }

  /** Releases exactly the hold {@code holdId} of a grant (a Hold stream's); true when the lock was freed. */
  public boolean release(String name, String token, String holdId) {
    ReleaseRequest request = ReleaseRequest.newBuilder().setName(name).setToken(token).setHoldId(holdId).build();
    return blocking.withDeadlineAfter(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).release(request).getReleased();
  }

  /** The lock's holders, waiters and last fencing token (never a token). */
  public InspectResponse inspect(String name) {
    return blocking.withDeadlineAfter(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
        .inspect(InspectRequest.newBuilder().setName(name).build());
  }

  /**
   * Blocks until this candidate leads {@code name}, publishing {@code value} (e.g. its address), with
   * leases of {@code ttl}. The leader is the lock's exclusive holder; see {@link Leadership}.
   *
   * @throws LeaseLostException when the grant arrives after its lease could have ended
   */
  public Leadership campaign(String name, String value, Duration ttl) throws LeaseLostException, InterruptedException {
    HoldOptions options = HoldOptions.builder().ttl(ttl).value(value).waitTimeout(Leadership.CAMPAIGN_WAIT).build();
    while (true) {
      try {
        return new Leadership(hold(name, options));
      } catch (NotAcquiredException e) {
        // The longest wait one Hold may ask for ran out: campaign again.
      }
    }
  }

  /**
   * Calls {@code listener} with the leader of {@code name} (empty while there is none) now and after
   * every change, on a gRPC thread, until the returned observer is closed. Watches again a second
   * after the stream fails (a server restart).
   */
  public LeaderObserver observe(String name, Consumer<Optional<Leader>> listener) {
    return new LeaderObserver(stub, name, listener, timer);
  }

  /** Stops the deadline timer, and shuts down the channel when {@link #connect} made it. Close leases first. */
  @Override
  public void close() {
    timer.shutdownNow();
    if (ownedChannel != null) {
      ownedChannel.shutdownNow();
      try {
        ownedChannel.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
