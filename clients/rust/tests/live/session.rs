//! Many locks under one Session stream, on the live server.

use std::time::{Duration, Instant};

use holdfast::v1::LostReason;
use holdfast::{Error, Lease, LockOptions, Session, SessionOptions};
use tonic::Code;

use crate::support::*;

fn options(ttl_ms: u64, wait_ms: u64) -> LockOptions {
    LockOptions {
        ttl: Duration::from_millis(ttl_ms),
        wait: Duration::from_millis(wait_ms),
        ..Default::default()
    }
}

/// Holds `n` locks under `session` at once (all the holds in flight together).
async fn hold_many(session: &Session, prefix: &str, n: usize, opts: &LockOptions) -> Vec<Lease> {
    let mut holds = tokio::task::JoinSet::new();
    for i in 0..n {
        let (session, name, opts) = (session.clone(), format!("{prefix}-{i}"), opts.clone());
        holds.spawn(async move { (i, session.hold(&name, opts).await) });
    }
    let mut leases: Vec<_> = holds.join_all().await;
    leases.sort_by_key(|(i, _)| *i);
    leases
        .into_iter()
        .map(|(i, lease)| lease.unwrap_or_else(|e| panic!("hold {i}: {e}")))
        .collect()
}

#[tokio::test]
async fn a_session_holds_many_locks_with_one_heartbeat_and_close_frees_them() {
    let client = client().await;
    let session = client.session(SessionOptions::default()).await.unwrap();
    let (locks, ttl) = (100, Duration::from_millis(900));
    let prefix = random_name("session");
    let opts = LockOptions {
        owner: "rust-session".to_string(),
        ..options(900, 5_000)
    };
    let leases = hold_many(&session, &prefix, locks, &opts).await;
    let first: Vec<Instant> = leases.iter().map(Lease::deadline).collect();
    assert_eq!(session.stats().holds, locks);

    // Several renewal ticks (about ttl/3 each), counted as they arrive.
    let (start, before) = (Instant::now(), session.stats().renewed);
    wait_until("three ttls and six renewed messages", async || {
        start.elapsed() > 3 * ttl && session.stats().renewed >= before + 6
    })
    .await;
    let (elapsed, renewed) = (start.elapsed(), session.stats().renewed - before);
    for (i, lease) in leases.iter().enumerate() {
        assert!(!lease.is_lost(), "lease {i}: {:?}", lease.lost_error());
        assert!(
            lease.deadline() > first[i] + 2 * ttl,
            "lease {i}: the deadline did not move forward"
        );
    }
    // A few messages per tick for the whole session, where a message per renewal would be 100.
    let renewals = locks as u64 * (elapsed.as_millis() / (ttl / 3).as_millis()) as u64;
    assert!(
        renewed * 10 <= renewals,
        "{renewed} renewed messages in {elapsed:?} for about {renewals} lock renewals"
    );
    for (i, lease) in leases.iter().enumerate() {
        let info = inspect(&client, lease.name()).await; // another stream sees every one held
        assert_eq!(info.holders.len(), 1, "lock {i}");
        assert_eq!(
            (info.holders[0].owner.as_str(), info.holders[0].fencing_token),
            ("rust-session", lease.fencing_token())
        );
    }

    session.close().await.unwrap();
    for (i, lease) in leases.iter().enumerate() {
        let lost = wait_lost(lease).await;
        assert_eq!(lost.code, LostReason::Released, "lease {i} after close: {lost}");
    }
    for i in 0..locks {
        // All free at once: taken with no wait.
        let grant = client.acquire(&format!("{prefix}-{i}"), &options(10_000, 0)).await;
        assert!(grant.is_ok(), "lock {i} after close: {grant:?}");
    }
    let err = session
        .hold(&format!("{prefix}-after"), options(1_000, 0))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::SessionEnded { in_flight: false, .. }),
        "hold after close: {err}"
    );
    assert!(err.to_string().contains("it was closed"), "{err}");
}

#[tokio::test]
async fn operations_over_the_session_fail_as_their_unary_calls_and_the_session_goes_on() {
    let client = client().await;
    let session = client.session(SessionOptions::default()).await.unwrap();
    let err = session.hold("", options(1_000, 0)).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err}");
    assert!(
        err.to_string().starts_with(&format!(
            "holdfast at {} refused to hold lock \"\": invalid argument: ",
            addr()
        )),
        "{err}"
    );
    assert!(session.is_open());

    let name = random_name("session-ops");
    let grant = session.acquire(&name, &options(5_000, 1_000)).await.unwrap();
    let info = session.inspect(&name).await.unwrap();
    assert_eq!(info.holders[0].fencing_token, grant.fencing_token);
    let err = session.hold(&name, options(1_000, 200)).await.unwrap_err();
    assert!(matches!(err, Error::NotAcquired { .. }), "{err}");
    assert!(session.release(&grant).await.unwrap().released);
    session.close().await.unwrap();
}

#[tokio::test]
async fn a_lease_lost_under_a_session_is_reported_for_its_hold_only() {
    let client = client().await;
    let session = client.session(SessionOptions::default()).await.unwrap();
    let (kept, doomed) = (random_name("session-kept"), random_name("session-doomed"));
    // As for a Hold: the renewal finds the state gone well before the local deadline.
    let kept = session.hold(&kept, options(3_000, 1_000)).await.unwrap();
    let doomed = session.hold(&doomed, options(3_000, 1_000)).await.unwrap();
    delete_lock_state(doomed.name());
    let lost = wait_lost(&doomed).await;
    assert_eq!(lost.code, LostReason::Expired, "{lost}");
    let after = kept.deadline();
    wait_until("a renewal of the other lock", async || {
        kept.deadline() > after || kept.is_lost()
    })
    .await;
    assert!(!kept.is_lost(), "{:?}", kept.lost_error());
    assert_eq!(session.stats().holds, 1);
    kept.release().await.unwrap();
    session.close().await.unwrap();
}

#[tokio::test]
async fn dropping_a_session_lease_releases_the_lock_at_once() {
    let client = client().await;
    let other = client_at(&addr()).await;
    let session = client.session(SessionOptions::default()).await.unwrap();
    let name = random_name("session-dropped");
    let lease = session.hold(&name, options(60_000, 1_000)).await.unwrap();
    drop(lease);
    // Granted within a wait far shorter than the 60 s lease: the drop gave it back.
    let grant = other.acquire(&name, &options(5_000, 10_000)).await.unwrap();
    other.release(&grant).await.unwrap();
    assert!(session.is_open());
    session.close().await.unwrap();
}

#[tokio::test]
async fn pings_while_holding_re_anchor_the_deadline() {
    let client = client().await;
    let session = client
        .session(SessionOptions {
            ping_interval: Duration::from_millis(100),
            ..Default::default()
        })
        .await
        .unwrap();
    let before = session.stats().pongs;
    let lease = session
        .hold(&random_name("session-ping"), options(3_000, 1_000))
        .await
        .unwrap();
    wait_until("two pongs", async || session.stats().pongs >= before + 2).await;
    assert!(!lease.is_lost());
    lease.release().await.unwrap();
    session.close().await.unwrap();
}

/// A frozen server answers no ping: the session is cut off and its leases are lost at once (or
/// at their deadlines, whichever comes first).
#[tokio::test]
async fn session_leases_are_lost_when_the_server_freezes() {
    let processes = Processes::start().await;
    let client = client_at(&processes.addr).await;
    let options_ = SessionOptions {
        call_timeout: Duration::from_secs(1),
        ping_interval: Duration::from_millis(200),
    };
    let session = client.session(options_).await.unwrap();
    let leases = hold_many(&session, &random_name("session-frozen"), 3, &options(2_000, 1_000)).await;
    processes.freeze();
    for lease in &leases {
        let lost = wait_lost(lease).await;
        assert_eq!(lost.code, LostReason::Unspecified, "{lost}");
    }
    let ended = tokio::time::timeout(WAIT_LIMIT, session.ended())
        .await
        .expect("the session did not end");
    assert!(matches!(ended, Error::SessionEnded { .. }), "{ended}");
}
