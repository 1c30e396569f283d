package holdfast.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * LockService grants, renews, releases and reports named locks whose state lives in Redis.
 * </pre>
 */
@javax.annotation.Generated(
    value = "by gRPC proto compiler",
    comments = "Source: holdfast/v1/lock.proto")
@io.grpc.stub.annotations.GrpcGenerated
public final class LockServiceGrpc {

  private LockServiceGrpc() {}

  public static final String SERVICE_NAME = "holdfast.v1.LockService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<holdfast.v1.Lock.AcquireRequest,
      holdfast.v1.Lock.AcquireResponse> getAcquireMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Acquire",
      requestType = holdfast.v1.Lock.AcquireRequest.class,
      responseType = holdfast.v1.Lock.AcquireResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<holdfast.v1.Lock.AcquireRequest,
      holdfast.v1.Lock.AcquireResponse> getAcquireMethod() {
    io.grpc.MethodDescriptor<holdfast.v1.Lock.AcquireRequest, holdfast.v1.Lock.AcquireResponse> getAcquireMethod;
    if ((getAcquireMethod = LockServiceGrpc.getAcquireMethod) == null) {
      synchronized (LockServiceGrpc.class) {
        if ((getAcquireMethod = LockServiceGrpc.getAcquireMethod) == null) {
          LockServiceGrpc.getAcquireMethod = getAcquireMethod =
              io.grpc.MethodDescriptor.<holdfast.v1.Lock.AcquireRequest, holdfast.v1.Lock.AcquireResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Acquire"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.AcquireRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.AcquireResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LockServiceMethodDescriptorSupplier("Acquire"))
              .build();
        }
      }
    }
    return getAcquireMethod;
  }

  private static volatile io.grpc.MethodDescriptor<holdfast.v1.Lock.ReleaseRequest,
      holdfast.v1.Lock.ReleaseResponse> getReleaseMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Release",
      requestType = holdfast.v1.Lock.ReleaseRequest.class,
      responseType = holdfast.v1.Lock.ReleaseResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<holdfast.v1.Lock.ReleaseRequest,
      holdfast.v1.Lock.ReleaseResponse> getReleaseMethod() {
    io.grpc.MethodDescriptor<holdfast.v1.Lock.ReleaseRequest, holdfast.v1.Lock.ReleaseResponse> getReleaseMethod;
    if ((getReleaseMethod = LockServiceGrpc.getReleaseMethod) == null) {
      synchronized (LockServiceGrpc.class) {
        if ((getReleaseMethod = LockServiceGrpc.getReleaseMethod) == null) {
          LockServiceGrpc.getReleaseMethod = getReleaseMethod =
              io.grpc.MethodDescriptor.<holdfast.v1.Lock.ReleaseRequest, holdfast.v1.Lock.ReleaseResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Release"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.ReleaseRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.ReleaseResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LockServiceMethodDescriptorSupplier("Release"))
              .build();
        }
      }
    }
    return getReleaseMethod;
  }

  private static volatile io.grpc.MethodDescriptor<holdfast.v1.Lock.RenewRequest,
      holdfast.v1.Lock.RenewResponse> getRenewMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Renew",
      requestType = holdfast.v1.Lock.RenewRequest.class,
      responseType = holdfast.v1.Lock.RenewResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<holdfast.v1.Lock.RenewRequest,
      holdfast.v1.Lock.RenewResponse> getRenewMethod() {
    io.grpc.MethodDescriptor<holdfast.v1.Lock.RenewRequest, holdfast.v1.Lock.RenewResponse> getRenewMethod;
    if ((getRenewMethod = LockServiceGrpc.getRenewMethod) == null) {
      synchronized (LockServiceGrpc.class) {
        if ((getRenewMethod = LockServiceGrpc.getRenewMethod) == null) {
          LockServiceGrpc.getRenewMethod = getRenewMethod =
              io.grpc.MethodDescriptor.<holdfast.v1.Lock.RenewRequest, holdfast.v1.Lock.RenewResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Renew"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.RenewRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.RenewResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LockServiceMethodDescriptorSupplier("Renew"))
              .build();
        }
      }
    }
    return getRenewMethod;
  }

  private static volatile io.grpc.MethodDescriptor<holdfast.v1.Lock.HoldRequest,
      holdfast.v1.Lock.HoldResponse> getHoldMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Hold",
      requestType = holdfast.v1.Lock.HoldRequest.class,
      responseType = holdfast.v1.Lock.HoldResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<holdfast.v1.Lock.HoldRequest,
      holdfast.v1.Lock.HoldResponse> getHoldMethod() {
    io.grpc.MethodDescriptor<holdfast.v1.Lock.HoldRequest, holdfast.v1.Lock.HoldResponse> getHoldMethod;
    if ((getHoldMethod = LockServiceGrpc.getHoldMethod) == null) {
      synchronized (LockServiceGrpc.class) {
        if ((getHoldMethod = LockServiceGrpc.getHoldMethod) == null) {
          LockServiceGrpc.getHoldMethod = getHoldMethod =
              io.grpc.MethodDescriptor.<holdfast.v1.Lock.HoldRequest, holdfast.v1.Lock.HoldResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Hold"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.HoldRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.HoldResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LockServiceMethodDescriptorSupplier("Hold"))
              .build();
        }
      }
    }
    return getHoldMethod;
  }

  private static volatile io.grpc.MethodDescriptor<holdfast.v1.Lock.InspectRequest,
      holdfast.v1.Lock.InspectResponse> getInspectMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Inspect",
      requestType = holdfast.v1.Lock.InspectRequest.class,
      responseType = holdfast.v1.Lock.InspectResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<holdfast.v1.Lock.InspectRequest,
      holdfast.v1.Lock.InspectResponse> getInspectMethod() {
    io.grpc.MethodDescriptor<holdfast.v1.Lock.InspectRequest, holdfast.v1.Lock.InspectResponse> getInspectMethod;
    if ((getInspectMethod = LockServiceGrpc.getInspectMethod) == null) {
      synchronized (LockServiceGrpc.class) {
        if ((getInspectMethod = LockServiceGrpc.getInspectMethod) == null) {
          LockServiceGrpc.getInspectMethod = getInspectMethod =
              io.grpc.MethodDescriptor.<holdfast.v1.Lock.InspectRequest, holdfast.v1.Lock.InspectResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Inspect"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.InspectRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.InspectResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LockServiceMethodDescriptorSupplier("Inspect"))
              .build();
        }
      }
    }
    return getInspectMethod;
  }

  private static volatile io.grpc.MethodDescriptor<holdfast.v1.Lock.CheckFencingTokenRequest,
      holdfast.v1.Lock.CheckFencingTokenResponse> getCheckFencingTokenMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CheckFencingToken",
      requestType = holdfast.v1.Lock.CheckFencingTokenRequest.class,
      responseType = holdfast.v1.Lock.CheckFencingTokenResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<holdfast.v1.Lock.CheckFencingTokenRequest,
      holdfast.v1.Lock.CheckFencingTokenResponse> getCheckFencingTokenMethod() {
    io.grpc.MethodDescriptor<holdfast.v1.Lock.CheckFencingTokenRequest, holdfast.v1.Lock.CheckFencingTokenResponse> getCheckFencingTokenMethod;
    if ((getCheckFencingTokenMethod = LockServiceGrpc.getCheckFencingTokenMethod) == null) {
      synchronized (LockServiceGrpc.class) {
        if ((getCheckFencingTokenMethod = LockServiceGrpc.getCheckFencingTokenMethod) == null) {
          LockServiceGrpc.getCheckFencingTokenMethod = getCheckFencingTokenMethod =
              io.grpc.MethodDescriptor.<holdfast.v1.Lock.CheckFencingTokenRequest, holdfast.v1.Lock.CheckFencingTokenResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CheckFencingToken"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.CheckFencingTokenRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.CheckFencingTokenResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LockServiceMethodDescriptorSupplier("CheckFencingToken"))
              .build();
        }
      }
    }
    return getCheckFencingTokenMethod;
  }

  private static volatile io.grpc.MethodDescriptor<holdfast.v1.Lock.SetValueRequest,
      holdfast.v1.Lock.SetValueResponse> getSetValueMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "SetValue",
      requestType = holdfast.v1.Lock.SetValueRequest.class,
      responseType = holdfast.v1.Lock.SetValueResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<holdfast.v1.Lock.SetValueRequest,
      holdfast.v1.Lock.SetValueResponse> getSetValueMethod() {
    io.grpc.MethodDescriptor<holdfast.v1.Lock.SetValueRequest, holdfast.v1.Lock.SetValueResponse> getSetValueMethod;
    if ((getSetValueMethod = LockServiceGrpc.getSetValueMethod) == null) {
      synchronized (LockServiceGrpc.class) {
        if ((getSetValueMethod = LockServiceGrpc.getSetValueMethod) == null) {
          LockServiceGrpc.getSetValueMethod = getSetValueMethod =
              io.grpc.MethodDescriptor.<holdfast.v1.Lock.SetValueRequest, holdfast.v1.Lock.SetValueResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "SetValue"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.SetValueRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.SetValueResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LockServiceMethodDescriptorSupplier("SetValue"))
              .build();
        }
      }
    }
    return getSetValueMethod;
  }

  private static volatile io.grpc.MethodDescriptor<holdfast.v1.Lock.WatchRequest,
      holdfast.v1.Lock.WatchResponse> getWatchMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Watch",
      requestType = holdfast.v1.Lock.WatchRequest.class,
      responseType = holdfast.v1.Lock.WatchResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<holdfast.v1.Lock.WatchRequest,
      holdfast.v1.Lock.WatchResponse> getWatchMethod() {
    io.grpc.MethodDescriptor<holdfast.v1.Lock.WatchRequest, holdfast.v1.Lock.WatchResponse> getWatchMethod;
    if ((getWatchMethod = LockServiceGrpc.getWatchMethod) == null) {
      synchronized (LockServiceGrpc.class) {
        if ((getWatchMethod = LockServiceGrpc.getWatchMethod) == null) {
          LockServiceGrpc.getWatchMethod = getWatchMethod =
              io.grpc.MethodDescriptor.<holdfast.v1.Lock.WatchRequest, holdfast.v1.Lock.WatchResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Watch"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.WatchRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.WatchResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LockServiceMethodDescriptorSupplier("Watch"))
              .build();
        }
      }
    }
    return getWatchMethod;
  }

  private static volatile io.grpc.MethodDescriptor<holdfast.v1.Lock.AcquireSetRequest,
      holdfast.v1.Lock.AcquireSetResponse> getAcquireSetMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "AcquireSet",
      requestType = holdfast.v1.Lock.AcquireSetRequest.class,
      responseType = holdfast.v1.Lock.AcquireSetResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<holdfast.v1.Lock.AcquireSetRequest,
      holdfast.v1.Lock.AcquireSetResponse> getAcquireSetMethod() {
    io.grpc.MethodDescriptor<holdfast.v1.Lock.AcquireSetRequest, holdfast.v1.Lock.AcquireSetResponse> getAcquireSetMethod;
    if ((getAcquireSetMethod = LockServiceGrpc.getAcquireSetMethod) == null) {
      synchronized (LockServiceGrpc.class) {
        if ((getAcquireSetMethod = LockServiceGrpc.getAcquireSetMethod) == null) {
          LockServiceGrpc.getAcquireSetMethod = getAcquireSetMethod =
              io.grpc.MethodDescriptor.<holdfast.v1.Lock.AcquireSetRequest, holdfast.v1.Lock.AcquireSetResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "AcquireSet"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.AcquireSetRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.AcquireSetResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LockServiceMethodDescriptorSupplier("AcquireSet"))
              .build();
        }
      }
    }
    return getAcquireSetMethod;
  }

  private static volatile io.grpc.MethodDescriptor<holdfast.v1.Lock.ReleaseSetRequest,
      holdfast.v1.Lock.ReleaseSetResponse> getReleaseSetMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ReleaseSet",
      requestType = holdfast.v1.Lock.ReleaseSetRequest.class,
      responseType = holdfast.v1.Lock.ReleaseSetResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<holdfast.v1.Lock.ReleaseSetRequest,
      holdfast.v1.Lock.ReleaseSetResponse> getReleaseSetMethod() {
    io.grpc.MethodDescriptor<holdfast.v1.Lock.ReleaseSetRequest, holdfast.v1.Lock.ReleaseSetResponse> getReleaseSetMethod;
    if ((getReleaseSetMethod = LockServiceGrpc.getReleaseSetMethod) == null) {
      synchronized (LockServiceGrpc.class) {
        if ((getReleaseSetMethod = LockServiceGrpc.getReleaseSetMethod) == null) {
          LockServiceGrpc.getReleaseSetMethod = getReleaseSetMethod =
              io.grpc.MethodDescriptor.<holdfast.v1.Lock.ReleaseSetRequest, holdfast.v1.Lock.ReleaseSetResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ReleaseSet"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.ReleaseSetRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.ReleaseSetResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LockServiceMethodDescriptorSupplier("ReleaseSet"))
              .build();
        }
      }
    }
    return getReleaseSetMethod;
  }

  private static volatile io.grpc.MethodDescriptor<holdfast.v1.Lock.HoldSetRequest,
      holdfast.v1.Lock.HoldSetResponse> getHoldSetMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "HoldSet",
      requestType = holdfast.v1.Lock.HoldSetRequest.class,
      responseType = holdfast.v1.Lock.HoldSetResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<holdfast.v1.Lock.HoldSetRequest,
      holdfast.v1.Lock.HoldSetResponse> getHoldSetMethod() {
    io.grpc.MethodDescriptor<holdfast.v1.Lock.HoldSetRequest, holdfast.v1.Lock.HoldSetResponse> getHoldSetMethod;
    if ((getHoldSetMethod = LockServiceGrpc.getHoldSetMethod) == null) {
      synchronized (LockServiceGrpc.class) {
        if ((getHoldSetMethod = LockServiceGrpc.getHoldSetMethod) == null) {
          LockServiceGrpc.getHoldSetMethod = getHoldSetMethod =
              io.grpc.MethodDescriptor.<holdfast.v1.Lock.HoldSetRequest, holdfast.v1.Lock.HoldSetResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "HoldSet"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.HoldSetRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.HoldSetResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LockServiceMethodDescriptorSupplier("HoldSet"))
              .build();
        }
      }
    }
    return getHoldSetMethod;
  }

  private static volatile io.grpc.MethodDescriptor<holdfast.v1.Lock.SessionRequest,
      holdfast.v1.Lock.SessionResponse> getSessionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Session",
      requestType = holdfast.v1.Lock.SessionRequest.class,
      responseType = holdfast.v1.Lock.SessionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.BIDI_STREAMING)
  public static io.grpc.MethodDescriptor<holdfast.v1.Lock.SessionRequest,
      holdfast.v1.Lock.SessionResponse> getSessionMethod() {
    io.grpc.MethodDescriptor<holdfast.v1.Lock.SessionRequest, holdfast.v1.Lock.SessionResponse> getSessionMethod;
    if ((getSessionMethod = LockServiceGrpc.getSessionMethod) == null) {
      synchronized (LockServiceGrpc.class) {
        if ((getSessionMethod = LockServiceGrpc.getSessionMethod) == null) {
          LockServiceGrpc.getSessionMethod = getSessionMethod =
              io.grpc.MethodDescriptor.<holdfast.v1.Lock.SessionRequest, holdfast.v1.Lock.SessionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.BIDI_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Session"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.SessionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  holdfast.v1.Lock.SessionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LockServiceMethodDescriptorSupplier("Session"))
              .build();
        }
      }
    }
    return getSessionMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static LockServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<LockServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<LockServiceStub>() {
        @java.lang.Override
        public LockServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new LockServiceStub(channel, callOptions);
        }
      };
    return LockServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static LockServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<LockServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<LockServiceBlockingStub>() {
        @java.lang.Override
        public LockServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new LockServiceBlockingStub(channel, callOptions);
        }
      };
    return LockServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static LockServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<LockServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<LockServiceFutureStub>() {
        @java.lang.Override
        public LockServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new LockServiceFutureStub(channel, callOptions);
        }
      };
    return LockServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * LockService grants, renews, releases and reports named locks whose state lives in Redis.
   * </pre>
   */
  public static abstract class LockServiceImplBase implements io.grpc.BindableService {

    /**
     * <pre>
     * Acquires a lock, waiting up to wait_timeout_ms in a fair FIFO queue when it is taken.
     * A lock that is not granted in time is answered with OK and acquired=false.
     * </pre>
     */
    public void acquire(holdfast.v1.Lock.AcquireRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.AcquireResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getAcquireMethod(), responseObserver);
    }

    /**
     * <pre>
     * Releases one hold of a grant; the lock is freed when the hold count reaches zero.
     * A token that holds nothing (wrong, expired or released) is answered with NOT_FOUND.
     * </pre>
     */
    public void release(holdfast.v1.Lock.ReleaseRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.ReleaseResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getReleaseMethod(), responseObserver);
    }

    /**
     * <pre>
     * Renews the lease of a live grant; a token that holds nothing is answered with NOT_FOUND.
     * </pre>
     */
    public void renew(holdfast.v1.Lock.RenewRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.RenewResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRenewMethod(), responseObserver);
    }

    /**
     * <pre>
     * Holds a lock for as long as the stream stays open: the server renews the lease until the stream ends.
     * A Release or a cancel by the client frees the lock at once; any other end leaves the lease to run out first.
     * </pre>
     */
    public void hold(holdfast.v1.Lock.HoldRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.HoldResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getHoldMethod(), responseObserver);
    }

    /**
     * <pre>
     * Inspects a lock: its holders, waiters and last fencing token. Never returns a token.
     * </pre>
     */
    public void inspect(holdfast.v1.Lock.InspectRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.InspectResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getInspectMethod(), responseObserver);
    }

    /**
     * <pre>
     * Checks whether a fencing token belongs to a live holder right now (Chubby's CheckSequencer).
     * Check-then-act: the holder can lose the lock between this answer and its write. To close that
     * window the protected resource compares tokens itself, as each request arrives (the fencing wire
     * convention at AcquireResponse.fencing_token; docs/fencing.md).
     * </pre>
     */
    public void checkFencingToken(holdfast.v1.Lock.CheckFencingTokenRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.CheckFencingTokenResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCheckFencingTokenMethod(), responseObserver);
    }

    /**
     * <pre>
     * Replaces the value a live grant publishes to watchers (Holder.value); a token that holds nothing is answered with NOT_FOUND.
     * </pre>
     */
    public void setValue(holdfast.v1.Lock.SetValueRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.SetValueResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getSetValueMethod(), responseObserver);
    }

    /**
     * <pre>
     * Watches one lock: sends its current state at once, then one message per change (granted, released, expired,
     * lost, value changed), each with the state after it. A watcher that falls behind gets the latest state, not a
     * backlog. Never shows a token.
     * </pre>
     */
    public void watch(holdfast.v1.Lock.WatchRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.WatchResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getWatchMethod(), responseObserver);
    }

    /**
     * <pre>
     * Acquires several locks all or nothing: names are taken one at a time in one canonical order (by their UTF-8
     * bytes), so callers asking for overlapping sets in any order never deadlock. wait_timeout_ms covers the whole
     * set; a set not complete by then (or cancelled, or failed) gives back what it took and answers acquired=false.
     * </pre>
     */
    public void acquireSet(holdfast.v1.Lock.AcquireSetRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.AcquireSetResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getAcquireSetMethod(), responseObserver);
    }

    /**
     * <pre>
     * Releases every member of a set (one hold each); members whose token holds nothing are listed, not an error.
     * </pre>
     */
    public void releaseSet(holdfast.v1.Lock.ReleaseSetRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.ReleaseSetResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getReleaseSetMethod(), responseObserver);
    }

    /**
     * <pre>
     * Holds several locks all or nothing for as long as the stream stays open, as AcquireSet takes them and as Hold
     * keeps one. The set is lost as a whole when any member is lost: HoldLost.name says which.
     * </pre>
     */
    public void holdSet(holdfast.v1.Lock.HoldSetRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.HoldSetResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getHoldSetMethod(), responseObserver);
    }

    /**
     * <pre>
     * A session: one stream that carries many lock operations (docs/sessions.md). Each SessionRequest is one
     * operation with an op_id the client picks; the server answers each with a SessionResponse of the same op_id as
     * soon as it completes, in any order, so many operations are in flight at once. Every operation is checked and
     * run as its unary RPC is, and a bad one is answered with its own error (SessionResponse.error, the status code
     * and message the unary RPC would give): it never ends the session.
     * Locks taken with `hold` live as long as the session: the server renews them all and sends one SessionRenewed
     * per renewal tick for the whole session. A clean end (a `close` operation, the client half-closing the stream,
     * or a cancel from a live client) releases them all at once; a stream that vanishes (lost connection) leaves
     * them until the leases the client was told of run out, as Hold does.
     * By hand: grpcurl -plaintext -d &#64; 127.0.0.1:7070 holdfast.v1.LockService/Session, then one JSON request per
     * line, for example {"op_id": 1, "hold": {"name": "jobs/nightly", "ttl_ms": 10000}}; end stdin to close.
     * </pre>
     */
    public io.grpc.stub.StreamObserver<holdfast.v1.Lock.SessionRequest> session(
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.SessionResponse> responseObserver) {
      return io.grpc.stub.ServerCalls.asyncUnimplementedStreamingCall(getSessionMethod(), responseObserver);
    }

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
          .addMethod(
            getAcquireMethod(),
            io.grpc.stub.ServerCalls.asyncUnaryCall(
              new MethodHandlers<
                holdfast.v1.Lock.AcquireRequest,
                holdfast.v1.Lock.AcquireResponse>(
                  this, METHODID_ACQUIRE)))
          .addMethod(
            getReleaseMethod(),
            io.grpc.stub.ServerCalls.asyncUnaryCall(
              new MethodHandlers<
                holdfast.v1.Lock.ReleaseRequest,
                holdfast.v1.Lock.ReleaseResponse>(
                  this, METHODID_RELEASE)))
          .addMethod(
            getRenewMethod(),
            io.grpc.stub.ServerCalls.asyncUnaryCall(
              new MethodHandlers<
                holdfast.v1.Lock.RenewRequest,
                holdfast.v1.Lock.RenewResponse>(
                  this, METHODID_RENEW)))
          .addMethod(
            getHoldMethod(),
            io.grpc.stub.ServerCalls.asyncServerStreamingCall(
              new MethodHandlers<
                holdfast.v1.Lock.HoldRequest,
                holdfast.v1.Lock.HoldResponse>(
                  this, METHODID_HOLD)))
          .addMethod(
            getInspectMethod(),
            io.grpc.stub.ServerCalls.asyncUnaryCall(
              new MethodHandlers<
                holdfast.v1.Lock.InspectRequest,
                holdfast.v1.Lock.InspectResponse>(
                  this, METHODID_INSPECT)))
          .addMethod(
            getCheckFencingTokenMethod(),
            io.grpc.stub.ServerCalls.asyncUnaryCall(
              new MethodHandlers<
                holdfast.v1.Lock.CheckFencingTokenRequest,
                holdfast.v1.Lock.CheckFencingTokenResponse>(
                  this, METHODID_CHECK_FENCING_TOKEN)))
          .addMethod(
            getSetValueMethod(),
            io.grpc.stub.ServerCalls.asyncUnaryCall(
              new MethodHandlers<
                holdfast.v1.Lock.SetValueRequest,
                holdfast.v1.Lock.SetValueResponse>(
                  this, METHODID_SET_VALUE)))
          .addMethod(
            getWatchMethod(),
            io.grpc.stub.ServerCalls.asyncServerStreamingCall(
              new MethodHandlers<
                holdfast.v1.Lock.WatchRequest,
                holdfast.v1.Lock.WatchResponse>(
                  this, METHODID_WATCH)))
          .addMethod(
            getAcquireSetMethod(),
            io.grpc.stub.ServerCalls.asyncUnaryCall(
              new MethodHandlers<
                holdfast.v1.Lock.AcquireSetRequest,
                holdfast.v1.Lock.AcquireSetResponse>(
                  this, METHODID_ACQUIRE_SET)))
          .addMethod(
            getReleaseSetMethod(),
            io.grpc.stub.ServerCalls.asyncUnaryCall(
              new MethodHandlers<
                holdfast.v1.Lock.ReleaseSetRequest,
                holdfast.v1.Lock.ReleaseSetResponse>(
                  this, METHODID_RELEASE_SET)))
          .addMethod(
            getHoldSetMethod(),
            io.grpc.stub.ServerCalls.asyncServerStreamingCall(
              new MethodHandlers<
                holdfast.v1.Lock.HoldSetRequest,
                holdfast.v1.Lock.HoldSetResponse>(
                  this, METHODID_HOLD_SET)))
          .addMethod(
            getSessionMethod(),
            io.grpc.stub.ServerCalls.asyncBidiStreamingCall(
              new MethodHandlers<
                holdfast.v1.Lock.SessionRequest,
                holdfast.v1.Lock.SessionResponse>(
                  this, METHODID_SESSION)))
          .build();
    }
  }

  /**
   * <pre>
   * LockService grants, renews, releases and reports named locks whose state lives in Redis.
   * </pre>
   */
  public static final class LockServiceStub extends io.grpc.stub.AbstractAsyncStub<LockServiceStub> {
    private LockServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected LockServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new LockServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Acquires a lock, waiting up to wait_timeout_ms in a fair FIFO queue when it is taken.
     * A lock that is not granted in time is answered with OK and acquired=false.
     * </pre>
     */
    public void acquire(holdfast.v1.Lock.AcquireRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.AcquireResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getAcquireMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Releases one hold of a grant; the lock is freed when the hold count reaches zero.
     * A token that holds nothing (wrong, expired or released) is answered with NOT_FOUND.
     * </pre>
     */
    public void release(holdfast.v1.Lock.ReleaseRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.ReleaseResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getReleaseMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Renews the lease of a live grant; a token that holds nothing is answered with NOT_FOUND.
     * </pre>
     */
    public void renew(holdfast.v1.Lock.RenewRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.RenewResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRenewMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Holds a lock for as long as the stream stays open: the server renews the lease until the stream ends.
     * A Release or a cancel by the client frees the lock at once; any other end leaves the lease to run out first.
     * </pre>
     */
    public void hold(holdfast.v1.Lock.HoldRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.HoldResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getHoldMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Inspects a lock: its holders, waiters and last fencing token. Never returns a token.
     * </pre>
     */
    public void inspect(holdfast.v1.Lock.InspectRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.InspectResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getInspectMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Checks whether a fencing token belongs to a live holder right now (Chubby's CheckSequencer).
     * Check-then-act: the holder can lose the lock between this answer and its write. To close that
     * window the protected resource compares tokens itself, as each request arrives (the fencing wire
     * convention at AcquireResponse.fencing_token; docs/fencing.md).
     * </pre>
     */
    public void checkFencingToken(holdfast.v1.Lock.CheckFencingTokenRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.CheckFencingTokenResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCheckFencingTokenMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Replaces the value a live grant publishes to watchers (Holder.value); a token that holds nothing is answered with NOT_FOUND.
     * </pre>
     */
    public void setValue(holdfast.v1.Lock.SetValueRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.SetValueResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getSetValueMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Watches one lock: sends its current state at once, then one message per change (granted, released, expired,
     * lost, value changed), each with the state after it. A watcher that falls behind gets the latest state, not a
     * backlog. Never shows a token.
     * </pre>
     */
    public void watch(holdfast.v1.Lock.WatchRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.WatchResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getWatchMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Acquires several locks all or nothing: names are taken one at a time in one canonical order (by their UTF-8
     * bytes), so callers asking for overlapping sets in any order never deadlock. wait_timeout_ms covers the whole
     * set; a set not complete by then (or cancelled, or failed) gives back what it took and answers acquired=false.
     * </pre>
     */
    public void acquireSet(holdfast.v1.Lock.AcquireSetRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.AcquireSetResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getAcquireSetMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Releases every member of a set (one hold each); members whose token holds nothing are listed, not an error.
     * </pre>
     */
    public void releaseSet(holdfast.v1.Lock.ReleaseSetRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.ReleaseSetResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getReleaseSetMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Holds several locks all or nothing for as long as the stream stays open, as AcquireSet takes them and as Hold
     * keeps one. The set is lost as a whole when any member is lost: HoldLost.name says which.
     * </pre>
     */
    public void holdSet(holdfast.v1.Lock.HoldSetRequest request,
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.HoldSetResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getHoldSetMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * A session: one stream that carries many lock operations (docs/sessions.md). Each SessionRequest is one
     * operation with an op_id the client picks; the server answers each with a SessionResponse of the same op_id as
     * soon as it completes, in any order, so many operations are in flight at once. Every operation is checked and
     * run as its unary RPC is, and a bad one is answered with its own error (SessionResponse.error, the status code
     * and message the unary RPC would give): it never ends the session.
     * Locks taken with `hold` live as long as the session: the server renews them all and sends one SessionRenewed
     * per renewal tick for the whole session. A clean end (a `close` operation, the client half-closing the stream,
     * or a cancel from a live client) releases them all at once; a stream that vanishes (lost connection) leaves
     * them until the leases the client was told of run out, as Hold does.
     * By hand: grpcurl -plaintext -d &#64; 127.0.0.1:7070 holdfast.v1.LockService/Session, then one JSON request per
     * line, for example {"op_id": 1, "hold": {"name": "jobs/nightly", "ttl_ms": 10000}}; end stdin to close.
     * </pre>
     */
    public io.grpc.stub.StreamObserver<holdfast.v1.Lock.SessionRequest> session(
        io.grpc.stub.StreamObserver<holdfast.v1.Lock.SessionResponse> responseObserver) {
      return io.grpc.stub.ClientCalls.asyncBidiStreamingCall(
          getChannel().newCall(getSessionMethod(), getCallOptions()), responseObserver);
    }
  }

  /**
   * <pre>
   * LockService grants, renews, releases and reports named locks whose state lives in Redis.
   * </pre>
   */
  public static final class LockServiceBlockingStub extends io.grpc.stub.AbstractBlockingStub<LockServiceBlockingStub> {
    private LockServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected LockServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new LockServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Acquires a lock, waiting up to wait_timeout_ms in a fair FIFO queue when it is taken.
     * A lock that is not granted in time is answered with OK and acquired=false.
     * </pre>
     */
    public holdfast.v1.Lock.AcquireResponse acquire(holdfast.v1.Lock.AcquireRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getAcquireMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Releases one hold of a grant; the lock is freed when the hold count reaches zero.
     * A token that holds nothing (wrong, expired or released) is answered with NOT_FOUND.
     * </pre>
     */
    public holdfast.v1.Lock.ReleaseResponse release(holdfast.v1.Lock.ReleaseRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getReleaseMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Renews the lease of a live grant; a token that holds nothing is answered with NOT_FOUND.
     * </pre>
     */
    public holdfast.v1.Lock.RenewResponse renew(holdfast.v1.Lock.RenewRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRenewMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Holds a lock for as long as the stream stays open: the server renews the lease until the stream ends.
     * A Release or a cancel by the client frees the lock at once; any other end leaves the lease to run out first.
     * </pre>
     */
    public java.util.Iterator<holdfast.v1.Lock.HoldResponse> hold(
        holdfast.v1.Lock.HoldRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getHoldMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Inspects a lock: its holders, waiters and last fencing token. Never returns a token.
     * </pre>
     */
    public holdfast.v1.Lock.InspectResponse inspect(holdfast.v1.Lock.InspectRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getInspectMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Checks whether a fencing token belongs to a live holder right now (Chubby's CheckSequencer).
     * Check-then-act: the holder can lose the lock between this answer and its write. To close that
     * window the protected resource compares tokens itself, as each request arrives (the fencing wire
     * convention at AcquireResponse.fencing_token; docs/fencing.md).
     * </pre>
     */
    public holdfast.v1.Lock.CheckFencingTokenResponse checkFencingToken(holdfast.v1.Lock.CheckFencingTokenRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCheckFencingTokenMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Replaces the value a live grant publishes to watchers (Holder.value); a token that holds nothing is answered with NOT_FOUND.
     * </pre>
     */
    public holdfast.v1.Lock.SetValueResponse setValue(holdfast.v1.Lock.SetValueRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getSetValueMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Watches one lock: sends its current state at once, then one message per change (granted, released, expired,
     * lost, value changed), each with the state after it. A watcher that falls behind gets the latest state, not a
     * backlog. Never shows a token.
     * </pre>
     */
    public java.util.Iterator<holdfast.v1.Lock.WatchResponse> watch(
        holdfast.v1.Lock.WatchRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getWatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Acquires several locks all or nothing: names are taken one at a time in one canonical order (by their UTF-8
     * bytes), so callers asking for overlapping sets in any order never deadlock. wait_timeout_ms covers the whole
     * set; a set not complete by then (or cancelled, or failed) gives back what it took and answers acquired=false.
     * </pre>
     */
    public holdfast.v1.Lock.AcquireSetResponse acquireSet(holdfast.v1.Lock.AcquireSetRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getAcquireSetMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Releases every member of a set (one hold each); members whose token holds nothing are listed, not an error.
     * </pre>
     */
    public holdfast.v1.Lock.ReleaseSetResponse releaseSet(holdfast.v1.Lock.ReleaseSetRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getReleaseSetMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Holds several locks all or nothing for as long as the stream stays open, as AcquireSet takes them and as Hold
     * keeps one. The set is lost as a whole when any member is lost: HoldLost.name says which.
     * </pre>
     */
    public java.util.Iterator<holdfast.v1.Lock.HoldSetResponse> holdSet(
        holdfast.v1.Lock.HoldSetRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getHoldSetMethod(), getCallOptions(), request);
    }
  }

  /**
   * <pre>
   * LockService grants, renews, releases and reports named locks whose state lives in Redis.
   * </pre>
   */
  public static final class LockServiceFutureStub extends io.grpc.stub.AbstractFutureStub<LockServiceFutureStub> {
    private LockServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected LockServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new LockServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Acquires a lock, waiting up to wait_timeout_ms in a fair FIFO queue when it is taken.
     * A lock that is not granted in time is answered with OK and acquired=false.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<holdfast.v1.Lock.AcquireResponse> acquire(
        holdfast.v1.Lock.AcquireRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getAcquireMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Releases one hold of a grant; the lock is freed when the hold count reaches zero.
     * A token that holds nothing (wrong, expired or released) is answered with NOT_FOUND.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<holdfast.v1.Lock.ReleaseResponse> release(
        holdfast.v1.Lock.ReleaseRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getReleaseMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Renews the lease of a live grant; a token that holds nothing is answered with NOT_FOUND.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<holdfast.v1.Lock.RenewResponse> renew(
        holdfast.v1.Lock.RenewRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRenewMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Inspects a lock: its holders, waiters and last fencing token. Never returns a token.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<holdfast.v1.Lock.InspectResponse> inspect(
        holdfast.v1.Lock.InspectRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getInspectMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Checks whether a fencing token belongs to a live holder right now (Chubby's CheckSequencer).
     * Check-then-act: the holder can lose the lock between this answer and its write. To close that
     * window the protected resource compares tokens itself, as each request arrives (the fencing wire
     * convention at AcquireResponse.fencing_token; docs/fencing.md).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<holdfast.v1.Lock.CheckFencingTokenResponse> checkFencingToken(
        holdfast.v1.Lock.CheckFencingTokenRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCheckFencingTokenMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Replaces the value a live grant publishes to watchers (Holder.value); a token that holds nothing is answered with NOT_FOUND.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<holdfast.v1.Lock.SetValueResponse> setValue(
        holdfast.v1.Lock.SetValueRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getSetValueMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Acquires several locks all or nothing: names are taken one at a time in one canonical order (by their UTF-8
     * bytes), so callers asking for overlapping sets in any order never deadlock. wait_timeout_ms covers the whole
     * set; a set not complete by then (or cancelled, or failed) gives back what it took and answers acquired=false.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<holdfast.v1.Lock.AcquireSetResponse> acquireSet(
        holdfast.v1.Lock.AcquireSetRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getAcquireSetMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Releases every member of a set (one hold each); members whose token holds nothing are listed, not an error.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<holdfast.v1.Lock.ReleaseSetResponse> releaseSet(
        holdfast.v1.Lock.ReleaseSetRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getReleaseSetMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_ACQUIRE = 0;
  private static final int METHODID_RELEASE = 1;
  private static final int METHODID_RENEW = 2;
  private static final int METHODID_HOLD = 3;
  private static final int METHODID_INSPECT = 4;
  private static final int METHODID_CHECK_FENCING_TOKEN = 5;
  private static final int METHODID_SET_VALUE = 6;
  private static final int METHODID_WATCH = 7;
  private static final int METHODID_ACQUIRE_SET = 8;
  private static final int METHODID_RELEASE_SET = 9;
  private static final int METHODID_HOLD_SET = 10;
  private static final int METHODID_SESSION = 11;

  private static final class MethodHandlers<Req, Resp> implements
      io.grpc.stub.ServerCalls.UnaryMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ServerStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ClientStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.BidiStreamingMethod<Req, Resp> {
    private final LockServiceImplBase serviceImpl;
    private final int methodId;

    MethodHandlers(LockServiceImplBase serviceImpl, int methodId) {
      this.serviceImpl = serviceImpl;
      this.methodId = methodId;
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public void invoke(Req request, io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_ACQUIRE:
          serviceImpl.acquire((holdfast.v1.Lock.AcquireRequest) request,
              (io.grpc.stub.StreamObserver<holdfast.v1.Lock.AcquireResponse>) responseObserver);
          break;
        case METHODID_RELEASE:
          serviceImpl.release((holdfast.v1.Lock.ReleaseRequest) request,
              (io.grpc.stub.StreamObserver<holdfast.v1.Lock.ReleaseResponse>) responseObserver);
          break;
        case METHODID_RENEW:
          serviceImpl.renew((holdfast.v1.Lock.RenewRequest) request,
              (io.grpc.stub.StreamObserver<holdfast.v1.Lock.RenewResponse>) responseObserver);
          break;
        case METHODID_HOLD:
          serviceImpl.hold((holdfast.v1.Lock.HoldRequest) request,
              (io.grpc.stub.StreamObserver<holdfast.v1.Lock.HoldResponse>) responseObserver);
          break;
        case METHODID_INSPECT:
          serviceImpl.inspect((holdfast.v1.Lock.InspectRequest) request,
              (io.grpc.stub.StreamObserver<holdfast.v1.Lock.InspectResponse>) responseObserver);
          break;
        case METHODID_CHECK_FENCING_TOKEN:
          serviceImpl.checkFencingToken((holdfast.v1.Lock.CheckFencingTokenRequest) request,
              (io.grpc.stub.StreamObserver<holdfast.v1.Lock.CheckFencingTokenResponse>) responseObserver);
          break;
        case METHODID_SET_VALUE:
          serviceImpl.setValue((holdfast.v1.Lock.SetValueRequest) request,
              (io.grpc.stub.StreamObserver<holdfast.v1.Lock.SetValueResponse>) responseObserver);
          break;
        case METHODID_WATCH:
          serviceImpl.watch((holdfast.v1.Lock.WatchRequest) request,
              (io.grpc.stub.StreamObserver<holdfast.v1.Lock.WatchResponse>) responseObserver);
          break;
        case METHODID_ACQUIRE_SET:
          serviceImpl.acquireSet((holdfast.v1.Lock.AcquireSetRequest) request,
              (io.grpc.stub.StreamObserver<holdfast.v1.Lock.AcquireSetResponse>) responseObserver);
          break;
        case METHODID_RELEASE_SET:
          serviceImpl.releaseSet((holdfast.v1.Lock.ReleaseSetRequest) request,
              (io.grpc.stub.StreamObserver<holdfast.v1.Lock.ReleaseSetResponse>) responseObserver);
          break;
        case METHODID_HOLD_SET:
          serviceImpl.holdSet((holdfast.v1.Lock.HoldSetRequest) request,
              (io.grpc.stub.StreamObserver<holdfast.v1.Lock.HoldSetResponse>) responseObserver);
          break;
        default:
          throw new AssertionError();
      }
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public io.grpc.stub.StreamObserver<Req> invoke(
        io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_SESSION:
          return (io.grpc.stub.StreamObserver<Req>) serviceImpl.session(
              (io.grpc.stub.StreamObserver<holdfast.v1.Lock.SessionResponse>) responseObserver);
        default:
          throw new AssertionError();
      }
    }
  }

  private static abstract class LockServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    LockServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return holdfast.v1.Lock.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("LockService");
    }
  }

  private static final class LockServiceFileDescriptorSupplier
      extends LockServiceBaseDescriptorSupplier {
    LockServiceFileDescriptorSupplier() {}
  }

  private static final class LockServiceMethodDescriptorSupplier
      extends LockServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final String methodName;

    LockServiceMethodDescriptorSupplier(String methodName) {
      this.methodName = methodName;
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.MethodDescriptor getMethodDescriptor() {
      return getServiceDescriptor().findMethodByName(methodName);
    }
  }

  private static volatile io.grpc.ServiceDescriptor serviceDescriptor;

  public static io.grpc.ServiceDescriptor getServiceDescriptor() {
    io.grpc.ServiceDescriptor result = serviceDescriptor;
    if (result == null) {
      synchronized (LockServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new LockServiceFileDescriptorSupplier())
              .addMethod(getAcquireMethod())
              .addMethod(getReleaseMethod())
              .addMethod(getRenewMethod())
              .addMethod(getHoldMethod())
              .addMethod(getInspectMethod())
              .addMethod(getCheckFencingTokenMethod())
              .addMethod(getSetValueMethod())
              .addMethod(getWatchMethod())
              .addMethod(getAcquireSetMethod())
              .addMethod(getReleaseSetMethod())
              .addMethod(getHoldSetMethod())
              .addMethod(getSessionMethod())
              .build();
        }
      }
    }
    return result;
  }
}
