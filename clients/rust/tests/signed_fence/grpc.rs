//! The guard as a tonic server's layer (`Server::builder().layer(guard)`), called by a tonic
//! client over a real HTTP/2 connection: refusals are gRPC statuses (trailers-only), a header sent
//! twice is INVALID_ARGUMENT, and the handler reads the admitted fence from the extensions.

use std::convert::Infallible;

use bytes::{BufMut as _, Bytes, BytesMut};
use holdfast::fencing::{AdmittedFence, FenceGuardLayer, KeyRing, MemoryFenceStore};
use holdfast::v1::InspectResponse;
use holdfast::v1::lock_service_client::LockServiceClient;
use http_body_util::{BodyExt as _, StreamBody};
use prost::Message as _;
use tonic::Code;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};

use crate::support::*;

/// A gRPC "LockService" whose every call answers an InspectResponse naming the admitted fence
/// (name = its lock, fencing_token = its token).
async fn serve(guard: FenceGuardLayer) -> (Channel, tokio::task::JoinHandle<()>) {
    let service = tower::service_fn(|request: http::Request<tonic::body::Body>| async move {
        let fence = request.extensions().get::<AdmittedFence>().cloned();
        let message = InspectResponse {
            name: fence.as_ref().map(|f| f.lock.clone()).unwrap_or_default(),
            fencing_token: fence.map(|f| f.token).unwrap_or_default(),
            ..Default::default()
        };
        let encoded = message.encode_to_vec();
        let mut frame = BytesMut::with_capacity(5 + encoded.len());
        frame.put_u8(0);
        frame.put_u32(encoded.len() as u32);
        frame.put_slice(&encoded);
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", "0".parse().unwrap());
        let frames = [
            Ok::<_, Infallible>(http_body::Frame::data(frame.freeze())),
            Ok(http_body::Frame::trailers(trailers)),
        ];
        let body = StreamBody::new(tokio_stream::iter(frames)).map_err(|never| match never {});
        let response = http::Response::builder()
            .header("content-type", "application/grpc")
            .body(tonic::body::Body::new(body))
            .unwrap();
        Ok::<_, Infallible>(response)
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let server = tokio::spawn(async move {
        let _ = tonic::transport::Server::builder()
            .layer(guard)
            .serve_with_incoming(service, incoming)
            .await;
    });
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    (channel, server)
}

fn call(fence: Option<&str>, lock: &str, token: &str) -> tonic::Request<holdfast::v1::InspectRequest> {
    let mut request = tonic::Request::new(holdfast::v1::InspectRequest::default());
    let metadata = request.metadata_mut();
    if let Some(fence) = fence {
        metadata.insert("holdfast-fence", MetadataValue::try_from(fence).unwrap());
    }
    metadata.insert("holdfast-fence-lock", MetadataValue::try_from(lock).unwrap());
    metadata.insert("holdfast-fence-token", MetadataValue::try_from(token).unwrap());
    request
}

#[tokio::test]
async fn grpc_refusals_are_statuses_and_the_handler_reads_the_fence() {
    let ring = KeyRing::from_jwks(&ring_jwks()).unwrap();
    let (channel, server) = serve(
        FenceGuardLayer::new(MemoryFenceStore::default())
            .key_ring(ring)
            .lock("orders"),
    )
    .await;
    let mut client = LockServiceClient::new(channel);
    let fence6 = sign(KEY_1, "default", "orders", 6, None);
    let fence5 = sign(KEY_1, "default", "orders", 5, None);

    let admitted = client
        .inspect(call(Some(&fence6), "orders", "6"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((admitted.name.as_str(), admitted.fencing_token), ("orders", 6));

    let stale = client.inspect(call(Some(&fence5), "orders", "5")).await.unwrap_err();
    assert_eq!(stale.code(), Code::FailedPrecondition);
    assert_eq!(
        stale.message(),
        "stale fencing token for lock \"orders\": 5 is older than 6, the newest seen"
    );

    let cases = [
        (
            call(None, "orders", "99"),
            Code::PermissionDenied,
            "this resource requires a signed fence (header holdfast-fence)",
        ),
        (
            call(Some(&sign(OUTSIDER, "default", "orders", 7, None)), "orders", "7"),
            Code::PermissionDenied,
            "fence signed by unknown key \"2sBz4BI73qWd2bO9\"",
        ),
        (
            call(
                Some(&sign(KEY_1, "default", "tenant/é", 7, None)),
                "tenant%2F%C3%A9",
                "7",
            ),
            Code::PermissionDenied,
            "fence for lock \"tenant/é\" refused: this resource is protected by lock \"orders\"",
        ),
        (
            call(Some(&fence6[..20]), "orders", "6"),
            Code::InvalidArgument,
            "malformed fence: header holdfast-fence: ",
        ),
    ];
    for (request, code, message) in cases {
        let status = client.inspect(request).await.unwrap_err();
        assert_eq!(status.code(), code, "{}", status.message());
        assert!(
            status.message().starts_with(message),
            "{} (want {message})",
            status.message()
        );
    }
    let mut twice = call(Some(&fence6), "orders", "6");
    twice
        .metadata_mut()
        .append("holdfast-fence-token", MetadataValue::from_static("6"));
    let status = client.inspect(twice).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{}", status.message());
    assert_eq!(
        status.message(),
        "malformed fence: header holdfast-fence-token is sent more than once"
    );
    server.abort();
}

/// The trailers-only refusal, as bytes on the wire of the layer: status 200, grpc-status in the
/// headers, an empty body that ends at once.
#[tokio::test]
async fn a_grpc_refusal_is_trailers_only() {
    use tower_layer::Layer as _;
    use tower_service::Service as _;
    let inner = tower::service_fn(|_: http::Request<String>| async {
        Ok::<_, Infallible>(http::Response::new(http_body_util::Full::new(Bytes::from_static(
            b"reached",
        ))))
    });
    let mut guard = FenceGuardLayer::new(MemoryFenceStore::default())
        .lock("orders")
        .layer(inner);
    let request = http::Request::post("/holdfast.v1.LockService/Inspect")
        .header("content-type", "application/grpc+proto")
        .body(String::new())
        .unwrap();
    std::future::poll_fn(|cx| guard.poll_ready(cx)).await.unwrap();
    let response = guard.call(request).await.unwrap();
    assert_eq!(response.status(), http::StatusCode::OK);
    assert_eq!(response.headers()["grpc-status"], "3");
    assert_eq!(
        response.headers()["grpc-message"],
        "missing fence: header holdfast-fence-token is required"
    );
    assert!(http_body::Body::is_end_stream(response.body()));
}
