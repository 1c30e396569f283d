//! Locks held through their own Hold stream, and one-shot grants, on the live server.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use holdfast::v1::LostReason;
use holdfast::{Client, ConnectOptions, Error, LockOptions};

use crate::support::*;

fn options(ttl_ms: u64, wait_ms: u64) -> LockOptions {
    LockOptions {
        ttl: Duration::from_millis(ttl_ms),
        wait: Duration::from_millis(wait_ms),
        ..Default::default()
    }
}

#[tokio::test]
async fn acquire_reenter_renew_and_release() {
    let client = client().await;
    let name = random_name("acquire");
    let opts = LockOptions {
        owner: "rust-test".to_string(),
        ..options(5_000, 1_000)
    };
    let first = client.acquire(&name, &opts).await.unwrap();
    assert!(first.fencing_token > 0 && !first.token.is_empty());
    let info = inspect(&client, &name).await;
    assert_eq!(info.holders.len(), 1);
    assert_eq!(
        (info.holders[0].owner.as_str(), info.holders[0].fencing_token),
        ("rust-test", first.fencing_token)
    );

    // The same owner re-enters: the same grant, held twice.
    let mut again = client.acquire(&name, &opts).await.unwrap();
    assert_eq!(
        (again.token.as_str(), again.fencing_token, again.hold_count),
        (first.token.as_str(), first.fencing_token, 2)
    );
    let before = again.deadline;
    client.renew(&mut again, Duration::from_secs(20)).await.unwrap();
    assert!(again.deadline > before, "renew did not move the deadline");

    // Another owner cannot take it.
    let other = LockOptions {
        owner: "someone-else".to_string(),
        ..options(5_000, 0)
    };
    let err = client.acquire(&name, &other).await.unwrap_err();
    assert!(matches!(err, Error::NotAcquired { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!("lock \"{name}\" was not acquired within 0 ms: another holder has it")
    );

    assert!(
        !client.release(&again).await.unwrap().released,
        "the first release frees one hold of two"
    );
    assert!(client.release(&first).await.unwrap().released);
    assert!(inspect(&client, &name).await.holders.is_empty());
}

#[tokio::test]
async fn hold_and_release() {
    let client = client().await;
    let name = random_name("hold");
    let lease = client
        .hold(
            &name,
            LockOptions {
                owner: "rust-hold".to_string(),
                ..options(3_000, 1_000)
            },
        )
        .await
        .unwrap();
    assert!(lease.fencing_token() > 0 && !lease.token().is_empty() && !lease.hold_id().is_empty());
    assert_eq!(lease.name(), name);
    assert!(!lease.is_lost());
    let info = inspect(&client, &name).await;
    assert_eq!(info.holders.len(), 1);
    assert_eq!(
        (info.holders[0].owner.as_str(), info.holders[0].fencing_token),
        ("rust-hold", lease.fencing_token())
    );
    lease.release().await.unwrap();
    assert!(inspect(&client, &name).await.holders.is_empty());
}

#[tokio::test]
async fn second_holder_waits_for_the_first_and_gets_a_greater_fencing_token() {
    let client = client().await;
    let name = random_name("contention");
    let first = client.hold(&name, options(3_000, 1_000)).await.unwrap();
    let first_token = first.fencing_token();
    let released = Arc::new(AtomicBool::new(false));
    let second = tokio::spawn({
        let (client, name, released) = (client.clone(), name.clone(), released.clone());
        async move {
            let lease = client.hold(&name, options(3_000, 10_000)).await;
            (lease, released.load(Ordering::SeqCst))
        }
    });
    wait_until("the second holder to queue", async || {
        inspect(&client, &name).await.waiters == 1
    })
    .await;
    released.store(true, Ordering::SeqCst);
    first.release().await.unwrap();
    let (second, released_before) = second.await.unwrap();
    let second = second.unwrap();
    assert!(
        released_before,
        "the second holder got the lock before the first released it"
    );
    assert!(
        second.fencing_token() > first_token,
        "fencing token {} is not above {first_token}",
        second.fencing_token()
    );
    second.release().await.unwrap();
}

#[tokio::test]
async fn not_acquired_in_time_says_so() {
    let client = client().await;
    let name = random_name("busy");
    let held = client.hold(&name, options(3_000, 1_000)).await.unwrap();
    let err = client.hold(&name, options(3_000, 200)).await.unwrap_err();
    assert!(matches!(err, Error::NotAcquired { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("lock \"{name}\" was not acquired within 200 ms: another holder has it")
    );
    held.release().await.unwrap();
}

#[tokio::test]
async fn a_held_lock_is_renewed_past_several_ttls() {
    let client = client().await;
    let name = random_name("renewed");
    let ttl = Duration::from_millis(300);
    let lease = client.hold(&name, options(300, 1_000)).await.unwrap();
    let first = lease.deadline();
    wait_until("the deadline to move past four ttls", async || {
        lease.deadline() > first + 4 * ttl || lease.is_lost()
    })
    .await;
    assert!(!lease.is_lost(), "{:?}", lease.lost_error());
    let info = inspect(&client, &name).await;
    assert_eq!(info.holders.len(), 1);
    assert_eq!(info.holders[0].fencing_token, lease.fencing_token());
    lease.release().await.unwrap();
}

#[tokio::test]
async fn a_lease_whose_state_is_deleted_is_reported_lost() {
    let client = client().await;
    let name = random_name("deleted");
    // A ttl long enough that the server's next renewal (at about a third of it) finds the state
    // gone well before the local deadline, even on a busy machine.
    let lease = client.hold(&name, options(3_000, 1_000)).await.unwrap();
    delete_lock_state(&name);
    let lost = wait_lost(&lease).await;
    assert_eq!(lost.code, LostReason::Expired, "{lost}");
    assert!(
        lost.to_string().starts_with(&format!("lock \"{name}\" is lost: ")),
        "{lost}"
    );
    let err = lease.release().await.unwrap_err();
    assert!(
        matches!(&err, Error::Lost(l) if l.code == LostReason::Expired),
        "release after the loss: {err}"
    );
}

#[tokio::test]
async fn dropping_the_lease_releases_the_lock_at_once() {
    let client = client().await;
    let other = client_at(&addr()).await; // another connection, as another process would have
    let name = random_name("dropped");
    let lease = client.hold(&name, options(60_000, 1_000)).await.unwrap();
    drop(lease);
    // Granted within a wait far shorter than the 60 s lease: the drop gave it back.
    let grant = other.acquire(&name, &options(5_000, 10_000)).await.unwrap();
    other.release(&grant).await.unwrap();
}

#[tokio::test]
async fn with_lock_runs_the_work_and_releases() {
    let client = client().await;
    let name = random_name("with-lock");
    let (token, held) = client
        .with_lock(&name, options(3_000, 1_000), async |lease| {
            let info = client.inspect(lease.name()).await.unwrap();
            (lease.fencing_token(), info.holders.len())
        })
        .await
        .unwrap();
    assert!(token > 0);
    assert_eq!(held, 1);
    assert!(
        inspect(&client, &name).await.holders.is_empty(),
        "with_lock did not give the lock back"
    );
}

#[tokio::test]
async fn with_lock_stops_the_work_when_the_lease_is_lost() {
    let client = client().await;
    let name = random_name("with-lock-lost");
    let result = client
        .with_lock(&name, options(600, 1_000), async |_lease| {
            delete_lock_state(&name);
            std::future::pending::<()>().await // work that would never end by itself
        })
        .await;
    match result {
        Err(Error::Lost(lost)) => assert_eq!(lost.name, name),
        other => panic!("with_lock = {other:?}, want Error::Lost"),
    }
}

#[tokio::test]
async fn the_fence_goes_on_requests() {
    let client = client().await;
    let name = format!("{} a/é", random_name("fence"));
    let lease = client.hold(&name, options(3_000, 1_000)).await.unwrap();
    let mut headers = http::HeaderMap::new();
    lease.fence_headers(&mut headers);
    let token = lease.fencing_token().to_string();
    assert_eq!(headers["holdfast-fence-token"], token.as_str());
    assert_eq!(
        headers["holdfast-fence-lock"],
        name.replace(' ', "%20")
            .replace('/', "%2F")
            .replace('é', "%C3%A9")
            .as_str()
    );
    let mut request = tonic::Request::new(());
    lease.fence_request(&mut request);
    assert_eq!(request.metadata().get("holdfast-fence-token").unwrap(), token.as_str());
    lease.release().await.unwrap();
}

/// A frozen server sends nothing, not even lost: the client's own deadline must end the lease.
#[tokio::test]
async fn a_lease_is_lost_at_its_local_deadline_when_the_server_freezes() {
    let processes = Processes::start().await;
    let client = client_at(&processes.addr).await;
    let lease = client.hold(&random_name("frozen"), options(500, 1_000)).await.unwrap();
    processes.freeze();
    let lost = wait_lost(&lease).await;
    assert_eq!(lost.code, LostReason::Unspecified);
    assert!(lost.reason.contains("local deadline"), "{lost}");
    assert!(std::time::Instant::now() >= lease.deadline());
    // A call to the frozen server ends at the call timeout, said in words.
    let options = ConnectOptions {
        call_timeout: Duration::from_millis(500),
        ..Default::default()
    };
    let impatient = Client::connect(&processes.addr, options).await.unwrap();
    let err = impatient.inspect("x").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "holdfast at {} is unavailable: no answer within the call timeout (ConnectOptions::call_timeout, plus the wait asked for)",
            processes.addr
        )
    );
}
