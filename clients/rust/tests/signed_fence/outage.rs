//! The store's backend killed or frozen by PID: the guard answers 503 `fence_store_unavailable`
//! within the store's bound (1 s by default), well under a generous ceiling, and does not hang.

use std::time::{Duration, Instant};

use holdfast::fencing::{FenceGuardLayer, FenceStore, KeyRing};
use http::StatusCode;

use crate::support::*;

/// For a 1 s bound: generous for a busy 2-core machine, and far below a hang.
const CEILING: Duration = Duration::from_secs(3);

/// Admits a write, runs `outage`, then expects 503 naming the lock, within the ceiling.
async fn unavailable_within_the_bound(store: impl FenceStore, outage: impl FnOnce(), backend: &str) {
    let ring = KeyRing::from_jwks(&ring_jwks()).unwrap();
    let resource = Resource::start(FenceGuardLayer::new(store).key_ring(ring).lock("orders")).await;
    let fence = sign(KEY_1, "default", "orders", 1, None);
    assert_eq!(
        resource.put(signed_headers(&fence, "orders", 1), "before").await.0,
        StatusCode::OK,
        "{backend}"
    );
    outage();
    let started = Instant::now();
    let (status, body) = resource.put(signed_headers(&fence, "orders", 1), "during").await;
    let took = started.elapsed();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{backend}: {body}");
    let body = json(&body);
    assert_eq!(body["error"], "fence_store_unavailable", "{backend}");
    assert_eq!(body["lock"], "orders", "{backend}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with("fence store unavailable for lock \"orders\": "),
        "{backend}: {message}"
    );
    assert!(
        message.contains(backend),
        "{backend}: the message does not name the backend: {message}"
    );
    assert!(
        took < CEILING,
        "{backend}: the 503 took {took:?}, past {CEILING:?} for a 1 s bound"
    );
    assert_eq!(resource.storage.bodies(), ["before"], "{backend}");
}

#[tokio::test]
async fn redis_killed_answers_unavailable_within_the_bound() {
    let redis = RedisServer::start(&[]);
    let pid = redis.pid();
    unavailable_within_the_bound(redis.store().await, || signal(pid, "KILL"), "Redis at 127.0.0.1").await;
}

#[tokio::test]
async fn redis_frozen_answers_unavailable_within_the_bound() {
    let redis = RedisServer::start(&[]);
    let pid = redis.pid();
    unavailable_within_the_bound(redis.store().await, || signal(pid, "STOP"), "Redis at 127.0.0.1").await;
}

#[tokio::test]
async fn postgres_killed_answers_unavailable_within_the_bound() {
    let pg = Postgres::start();
    unavailable_within_the_bound(pg.store().await, || pg.signal_all("KILL"), "PostgreSQL at 127.0.0.1").await;
}

#[tokio::test]
async fn postgres_frozen_answers_unavailable_within_the_bound() {
    let pg = Postgres::start();
    unavailable_within_the_bound(pg.store().await, || pg.signal_all("STOP"), "PostgreSQL at 127.0.0.1").await;
}

/// The Redis store refuses, at open, a Redis that can lose an acknowledged write, unless told.
#[tokio::test]
async fn a_lossy_redis_is_refused_at_open() {
    use holdfast::fencing::{RedisFenceStore, RedisOptions};
    let cases: [(&[&str], &str); 3] = [
        (&["--appendonly", "no"], "appendonly no"),
        (&["--appendfsync", "everysec"], "appendfsync everysec"),
        (&["--rename-command", "CONFIG", ""], "CONFIG disabled or renamed"),
    ];
    for (args, words) in cases {
        let redis = RedisServer::start(args);
        let err = RedisFenceStore::open(&redis.url, RedisOptions::default())
            .await
            .unwrap_err();
        assert!(
            err.cause.contains(words) && err.cause.contains("allow_lossy_redis"),
            "{words}: {err}"
        );
        let lossy = RedisOptions {
            allow_lossy_redis: true,
            ..Default::default()
        };
        let store = RedisFenceStore::open(&redis.url, lossy).await.unwrap();
        assert!(store.check("x", 1).await.unwrap().accepted);
    }
    // The store's script is the conformance copy, byte for byte, and its records are keyed by lock.
    let redis = RedisServer::start(&[]);
    let store = redis.store().await;
    assert!(store.check("orders", 12).await.unwrap().accepted);
    let conn = redis::Client::open(redis.url.as_str()).unwrap();
    let mut conn = conn.get_multiplexed_async_connection().await.unwrap();
    let stored: String = redis::cmd("GET")
        .arg(RedisFenceStore::key("orders"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        (RedisFenceStore::key("orders").as_str(), stored.as_str()),
        ("holdfast-fence:{orders}", "12")
    );
    // With the script cache empty, EVALSHA misses and the store's EVAL caches its script: the one
    // whose hash is the conformance copy's.
    let script = std::fs::read_to_string(repo_file("clients/conformance/fence-record-1.lua")).unwrap();
    let () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut conn).await.unwrap();
    assert!(store.check("orders", 13).await.unwrap().accepted);
    let sha = redis::Script::new(&script).get_hash().to_string();
    let loaded: Vec<bool> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(&sha)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(loaded, [true]);
}
