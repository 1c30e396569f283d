//! The guard in front of a real HTTP server (hyper), on each store's real backend: refusals that
//! never reach the store, Kleppmann's scenario with signed fences, rotation, the lease-end check,
//! what is guarded, and the lock rules.

use std::sync::atomic::Ordering;
use std::time::Duration;

use holdfast::fencing::{FenceGuardLayer, KeyRing, MemoryFenceStore};
use http::{HeaderMap, StatusCode};

use crate::support::*;

fn keys(ids: &[&str]) -> KeyRing {
    let all = vectors()["keys"]["ring"]["keys"].as_array().unwrap().clone();
    let outsider = vectors()["keys"]["outsider"].clone();
    let chosen: Vec<_> = all
        .into_iter()
        .chain([outsider])
        .filter(|k| ids.contains(&k["kid"].as_str().unwrap()))
        .collect();
    KeyRing::from_jwks(&jwks_of(&chosen)).unwrap()
}

fn assert_refused(what: &str, (status, body): (StatusCode, String), want_status: u16, want_error: &str) {
    assert_eq!(status.as_u16(), want_status, "{what}: {body}");
    let body = json(&body);
    assert_eq!(body["error"], want_error, "{what}: {body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{what}: no message: {body}"
    );
}

/// Every refusal of steps 1 to 7 is answered without one call to the store, on each store; a good
/// fence then reaches it (the counter counts).
#[tokio::test]
async fn refusals_never_reach_the_store() {
    let good = sign(KEY_1, "default", "orders", 7, None);
    let altered_token = good.replacen(":7:", ":18446744073709551615:", 1);
    let mut one_char = good.clone();
    let last = one_char.pop().unwrap();
    one_char.push(if last == 'A' { 'B' } else { 'A' });
    let twice = |name: &'static str, value: &str| {
        let mut headers = signed_headers(&good, "orders", 7);
        headers.append(name, value.parse().unwrap());
        headers
    };
    let cases: Vec<(&str, HeaderMap, u16, &str)> = vec![
        (
            "forged token, unsigned",
            unsigned_headers("orders", u64::MAX),
            403,
            "signed_fence_required",
        ),
        (
            "forged token in a signed fence",
            signed_headers(&altered_token, "orders", u64::MAX),
            403,
            "bad_fence_signature",
        ),
        (
            "another lock",
            signed_headers(&sign(KEY_1, "default", "payments", 7, None), "payments", 7),
            403,
            "fence_for_another_lock",
        ),
        (
            "another namespace",
            signed_headers(&sign(KEY_1, "team-a", "orders", 7, None), "orders", 7),
            403,
            "fence_for_another_namespace",
        ),
        (
            "unknown key",
            signed_headers(&sign(OUTSIDER, "default", "orders", 7, None), "orders", 7),
            403,
            "unknown_fence_key",
        ),
        (
            "truncated",
            signed_headers(&good[..good.len() - 1], "orders", 7),
            400,
            "malformed_fence",
        ),
        (
            "altered signature",
            signed_headers(&one_char, "orders", 7),
            403,
            "bad_fence_signature",
        ),
        (
            "signed fence twice",
            twice("holdfast-fence", &good),
            400,
            "malformed_fence",
        ),
        (
            "token twice",
            twice("holdfast-fence-token", "7"),
            400,
            "malformed_fence",
        ),
        (
            "lock twice",
            twice("holdfast-fence-lock", "orders"),
            400,
            "malformed_fence",
        ),
        (
            "unsigned token disagrees",
            signed_headers(&good, "orders", 8),
            400,
            "malformed_fence",
        ),
        ("no fence", HeaderMap::new(), 400, "missing_fence"),
    ];
    for backend in Backend::all() {
        let (store, calls) = Counting::new(backend.store().await);
        let resource = Resource::start(
            FenceGuardLayer::new(store)
                .key_ring(keys(&[KEY_1, KEY_2]))
                .lock("orders"),
        )
        .await;
        for (what, headers, status, error) in &cases {
            let what = format!("{} store, {what}", backend.name());
            assert_refused(&what, resource.put(headers.clone(), "forged").await, *status, error);
        }
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "{}: a refused request reached the store",
            backend.name()
        );
        assert!(resource.storage.bodies().is_empty());
        let (status, body) = resource.put(signed_headers(&good, "orders", 7), "real").await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::OK, "orders:7:true"),
            "{}",
            backend.name()
        );
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "{}: the good fence did not reach the store",
            backend.name()
        );
    }
}

/// Kleppmann's scenario with signed fences, on each store: holder A (token 5) is paused while B
/// (token 6) writes; A's late write is refused 409, no update is lost, B goes on writing. The
/// control: a guard without keys lets a forger's unsigned token take the resource over.
#[tokio::test]
async fn kleppmann_with_signed_fences_on_each_store() {
    let a = sign(KEY_1, "default", "doc", 5, None);
    let b = sign(KEY_2, "default", "doc", 6, None);
    for backend in Backend::all() {
        let name = backend.name();
        let resource = Resource::start(
            FenceGuardLayer::new(backend.store().await)
                .key_ring(keys(&[KEY_1, KEY_2]))
                .lock("doc"),
        )
        .await;
        assert_eq!(
            resource.put(signed_headers(&a, "doc", 5), "a-1").await.0,
            StatusCode::OK,
            "{name}"
        );
        // A pauses; B is granted the lock and writes.
        assert_eq!(
            resource.put(signed_headers(&b, "doc", 6), "b-1").await.0,
            StatusCode::OK,
            "{name}"
        );
        let late = resource.put(signed_headers(&a, "doc", 5), "a-2").await;
        assert_refused(name, late.clone(), 409, "stale_fencing_token");
        let body = json(&late.1);
        assert_eq!(
            (body["lock"].as_str(), body["token"].as_str(), body["newest"].as_str()),
            (Some("doc"), Some("5"), Some("6"))
        );
        assert_eq!(
            body["message"],
            "stale fencing token for lock \"doc\": 5 is older than 6, the newest seen"
        );
        // A forger without the key is refused and changes nothing.
        assert_refused(
            name,
            resource.put(unsigned_headers("doc", u64::MAX), "forged").await,
            403,
            "signed_fence_required",
        );
        assert_eq!(
            resource.put(signed_headers(&b, "doc", 6), "b-2").await.0,
            StatusCode::OK,
            "{name}"
        );
        assert_eq!(
            resource.storage.bodies(),
            ["a-1", "b-1", "b-2"],
            "{name}: an update was lost or a stale one stored"
        );
    }
    // Control: without keys the forger's unsigned token is accepted, and the real holder is locked out.
    let open = Resource::start(FenceGuardLayer::new(MemoryFenceStore::default()).lock("doc")).await;
    assert_eq!(open.put(signed_headers(&b, "doc", 6), "b-1").await.0, StatusCode::OK);
    assert_eq!(
        open.put(unsigned_headers("doc", u64::MAX), "forged").await.0,
        StatusCode::OK
    );
    assert_eq!(
        open.put(signed_headers(&b, "doc", 6), "b-2").await.0,
        StatusCode::CONFLICT
    );
}

/// Rotation at the guard: a fence of the old key is admitted while its key is in the ring, and
/// refused (unknown key) by a guard built with a ring without it.
#[tokio::test]
async fn rotation_by_a_new_ring() {
    let old = sign(KEY_1, "default", "orders", 3, None);
    let new = sign(KEY_2, "default", "orders", 4, None);
    let guard = |ids: &[&str]| {
        FenceGuardLayer::new(MemoryFenceStore::default())
            .key_ring(keys(ids))
            .lock("orders")
    };
    let before = Resource::start(guard(&[KEY_1])).await;
    assert_eq!(
        before.put(signed_headers(&old, "orders", 3), "x").await.0,
        StatusCode::OK
    );
    assert_refused(
        "the new key before",
        before.put(signed_headers(&new, "orders", 4), "x").await,
        403,
        "unknown_fence_key",
    );
    let during = Resource::start(guard(&[KEY_1, KEY_2])).await;
    assert_eq!(
        during.put(signed_headers(&old, "orders", 3), "x").await.0,
        StatusCode::OK
    );
    assert_eq!(
        during.put(signed_headers(&new, "orders", 4), "x").await.0,
        StatusCode::OK
    );
    let after = Resource::start(guard(&[KEY_2])).await;
    assert_refused(
        "the old key after",
        after.put(signed_headers(&old, "orders", 3), "x").await,
        403,
        "unknown_fence_key",
    );
    assert_eq!(
        after.put(signed_headers(&new, "orders", 4), "x").await.0,
        StatusCode::OK
    );
}

/// The lease-end check: a fence whose lease ended a minute ago (and no newer writer) is refused
/// with an allowance, before the store; without the check it is admitted (the control).
#[tokio::test]
async fn lease_end_check_on_and_off() {
    let ended = sign(KEY_1, "default", "orders", 9, Some(now_ms() - 60_000));
    let running = sign(KEY_1, "default", "orders", 9, Some(now_ms() + 600_000));
    let (store, calls) = Counting::new(MemoryFenceStore::default());
    let checked = FenceGuardLayer::new(store)
        .key_ring(keys(&[KEY_1]))
        .lock("orders")
        .lease_end_skew(Duration::from_secs(1));
    let resource = Resource::start(checked).await;
    let refused = resource.put(signed_headers(&ended, "orders", 9), "late").await;
    assert_refused("ended", refused.clone(), 409, "fence_lease_ended");
    let body = json(&refused.1);
    assert_eq!(
        (body["token"].as_str(), body["skew_ms"].as_str()),
        (Some("9"), Some("1000"))
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(
        resource.put(signed_headers(&running, "orders", 9), "on time").await.0,
        StatusCode::OK
    );
    let unchecked = Resource::start(
        FenceGuardLayer::new(MemoryFenceStore::default())
            .key_ring(keys(&[KEY_1]))
            .lock("orders"),
    )
    .await;
    assert_eq!(
        unchecked.put(signed_headers(&ended, "orders", 9), "late").await.0,
        StatusCode::OK
    );
}

/// Every request is guarded by default, GET included; a rule narrows it.
#[tokio::test]
async fn every_request_is_guarded_unless_a_rule_says_otherwise() {
    let all = Resource::start(
        FenceGuardLayer::new(MemoryFenceStore::default())
            .key_ring(keys(&[KEY_1]))
            .lock("orders"),
    )
    .await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<bytes::Bytes>>();
    for method in [
        http::Method::GET,
        http::Method::HEAD,
        http::Method::OPTIONS,
        http::Method::DELETE,
    ] {
        let request = http::Request::builder()
            .method(method.clone())
            .uri(format!("http://{}/doc", all.addr))
            .body(http_body_util::Empty::new())
            .unwrap();
        let response = client.request(request).await.unwrap();
        assert_eq!(
            response.status(),
            StatusCode::BAD_REQUEST,
            "{method} passed without a fence"
        );
    }
    let narrowed = FenceGuardLayer::new(MemoryFenceStore::default())
        .key_ring(keys(&[KEY_1]))
        .lock("orders")
        .guards(|parts| parts.uri.path() != "/health");
    let narrowed = Resource::start(narrowed).await;
    assert_eq!(
        put(narrowed.addr, "/health", HeaderMap::new(), "").await,
        (StatusCode::OK, "unguarded".to_string())
    );
    assert_eq!(
        put(narrowed.addr, "/doc", HeaderMap::new(), "").await.0,
        StatusCode::BAD_REQUEST
    );
}

/// The resource's lock from the request; unsigned fences where allowed, still bound to it.
#[tokio::test]
async fn lock_from_the_request_and_unsigned_fences_where_allowed() {
    let guard = FenceGuardLayer::new(MemoryFenceStore::default())
        .key_ring(keys(&[KEY_1]))
        .accept_unsigned(true)
        .lock_from(|parts| parts.uri.path().trim_start_matches("/locks/").to_string());
    let resource = Resource::start(guard).await;
    let fence_a = sign(KEY_1, "default", "a", 1, None);
    assert_eq!(
        put(resource.addr, "/locks/a", signed_headers(&fence_a, "a", 1), "")
            .await
            .1,
        "a:1:true"
    );
    assert_refused(
        "a's fence on b",
        put(resource.addr, "/locks/b", signed_headers(&fence_a, "a", 1), "").await,
        403,
        "fence_for_another_lock",
    );
    assert_eq!(
        put(resource.addr, "/locks/b", unsigned_headers("b", 2), "").await.1,
        "b:2:false"
    );
    assert_refused(
        "unsigned for a on b",
        put(resource.addr, "/locks/b", unsigned_headers("a", 3), "").await,
        403,
        "fence_for_another_lock",
    );
    // Without keys, a guard given the lock checks unsigned fences' lock too.
    let plain = Resource::start(FenceGuardLayer::new(MemoryFenceStore::default()).lock("orders")).await;
    assert_refused(
        "plain, another lock",
        plain.put(unsigned_headers("payments", 1), "").await,
        403,
        "fence_for_another_lock",
    );
    assert_eq!(plain.put(unsigned_headers("orders", 1), "").await.0, StatusCode::OK);
}
