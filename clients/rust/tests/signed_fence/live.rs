//! Real signed grants from a holdfast server started with a fence signing key (the one
//! clients/test-clients.sh names in HOLDFAST_SIGNED_ADDR and HOLDFAST_FENCE_KEYS_URL, or one
//! started here with a key of its own): the key ring fetched from its `/fence-keys`, Kleppmann's scenario on each store with the grants'
//! own fences, a Hold's renewals re-signed, a session's fences without a lease end.

use std::time::{Duration, Instant};

use holdfast::fencing::{FenceGuardLayer, KeyRing, SignedFence};
use holdfast::{Client, ConnectOptions, LockOptions, SessionOptions};
use http::{HeaderMap, StatusCode};

use crate::support::*;

/// The signing server's key ring (fetched from its `/fence-keys`), a client of it, and the server
/// when it was started here (it stops when dropped).
async fn signed_server() -> (KeyRing, Client, Option<SigningServer>) {
    let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
    let (addr, keys_url, own) = match (var("HOLDFAST_SIGNED_ADDR"), var("HOLDFAST_FENCE_KEYS_URL")) {
        (Some(addr), Some(url)) => (addr, url, None),
        _ => {
            let server = SigningServer::start().await;
            (server.addr.clone(), server.keys_url.clone(), Some(server))
        }
    };
    let ring = KeyRing::fetch(&keys_url).await.unwrap_or_else(|e| panic!("{e}"));
    let client = Client::connect(addr.as_str(), ConnectOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (ring, client, own)
}

fn lock_name(what: &str) -> String {
    format!("rust-signed-{what}-{}-{}", std::process::id(), now_ms())
}

#[tokio::test]
async fn real_signed_grants_through_the_guard() {
    let (ring, client, own) = signed_server().await;
    // The same ring from AdminService.GetFenceKeys.
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", client.addr()))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let keys = holdfast::v1::admin_service_client::AdminServiceClient::new(channel)
        .get_fence_keys(holdfast::v1::GetFenceKeysRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(KeyRing::from_fence_keys(&keys).unwrap().key_ids(), ring.key_ids());
    // And from the file test-clients.sh wrote of its server's ring.
    let file = std::env::var_os("HOLDFAST_FENCE_KEYS_FILE").filter(|f| !f.is_empty());
    if let (None, Some(file)) = (&own, file) {
        assert_eq!(KeyRing::from_file(file).unwrap().key_ids(), ring.key_ids());
    }
    for backend in Backend::all() {
        let what = backend.name();
        let name = lock_name(what);
        let resource = Resource::start(
            FenceGuardLayer::new(backend.store().await)
                .key_ring(ring.clone())
                .lock(name.clone()),
        )
        .await;
        let short = LockOptions {
            ttl: Duration::from_secs(2),
            ..Default::default()
        };
        let a = client.acquire(&name, &short).await.unwrap_or_else(|e| panic!("{e}"));
        let a_fence = SignedFence::parse(a.signed_fence.as_deref().expect("a signed grant")).unwrap();
        assert!(
            ring.verify(&a_fence) && a_fence.lock == name && a_fence.token == a.fencing_token,
            "{what}"
        );
        assert!(
            a_fence.lease_end_ms.is_some(),
            "{what}: an Acquire's fence states its lease end"
        );
        let mut headers = HeaderMap::new();
        a.fence_headers(&mut headers);
        assert_eq!(resource.put(headers.clone(), "a-1").await.0, StatusCode::OK, "{what}");
        // A pauses past its lease: B's acquire waits for it to run out.
        let waiting = LockOptions {
            ttl: Duration::from_secs(10),
            wait: WAIT_LIMIT,
            ..Default::default()
        };
        let b = client.acquire(&name, &waiting).await.unwrap_or_else(|e| panic!("{e}"));
        let mut b_headers = HeaderMap::new();
        b.fence_headers(&mut b_headers);
        assert_eq!(resource.put(b_headers.clone(), "b-1").await.0, StatusCode::OK, "{what}");
        let (status, body) = resource.put(headers, "a-2").await;
        assert_eq!(status, StatusCode::CONFLICT, "{what}: {body}");
        assert_eq!(json(&body)["error"], "stale_fencing_token");
        assert_eq!(resource.put(b_headers, "b-2").await.0, StatusCode::OK, "{what}");
        assert_eq!(resource.storage.bodies(), ["a-1", "b-1", "b-2"], "{what}");
        client.release(&b).await.unwrap();
    }
}

#[tokio::test]
async fn holds_are_re_signed_and_sessions_state_no_lease_end() {
    let (ring, client, _server) = signed_server().await;
    let lease = client
        .hold(
            &lock_name("hold"),
            LockOptions {
                ttl: Duration::from_secs(3),
                ..Default::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let first = lease.signed_fence().expect("a signed hold");
    let end = |text: &str| {
        SignedFence::parse(text)
            .unwrap()
            .lease_end_ms
            .expect("a Hold's fence states its end")
    };
    // Renewals come about every second: watch the lease's fence move on with them.
    let started = Instant::now();
    while lease.signed_fence().as_deref() == Some(&*first) {
        assert!(
            started.elapsed() < WAIT_LIMIT,
            "no renewal brought a fresh signed fence"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let renewed = lease.signed_fence().unwrap();
    assert!(end(&renewed) > end(&first));
    assert!(ring.verify(&SignedFence::parse(&renewed).unwrap()));
    let mut headers = HeaderMap::new();
    lease.fence_headers(&mut headers);
    assert_eq!(headers["holdfast-fence"], &*renewed);
    lease.release().await.unwrap();

    let session = client
        .session(SessionOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let held = session
        .hold(&lock_name("session"), LockOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let fence = SignedFence::parse(&held.signed_fence().expect("a signed session hold")).unwrap();
    assert!(ring.verify(&fence) && fence.lease_end_ms.is_none() && fence.token == held.fencing_token());
    session.close().await.unwrap();
}
