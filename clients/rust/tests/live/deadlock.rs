//! Deadlocks on the live server, which detects them (docs/deadlocks.md): two callers each hold one
//! lock and wait for the other's. The younger wait ends with `Error::Deadlock` naming the cycle,
//! well before its wait timeout; once that side gives back what it holds, the other is granted.

use std::time::{Duration, Instant};

use holdfast::{Client, Error, LockOptions, SessionOptions};

use crate::support::*;

const WAIT: Duration = Duration::from_secs(20);
/// Generous on a busy 2-core machine, and still well short of the 20 s wait: detection answered it.
const ANSWERED_WITHIN: Duration = Duration::from_secs(10);

fn as_owner(owner: &str, wait: Duration) -> LockOptions {
    LockOptions {
        owner: owner.to_string(),
        ttl: Duration::from_secs(30),
        wait,
        ..Default::default()
    }
}

/// Returns once `name` has a queued waiter, so that the next wait is the younger one.
async fn until_queued(client: &Client, name: &str) {
    wait_until(&format!("a waiter queued on {name}"), async || {
        inspect(client, name).await.waiters > 0
    })
    .await;
}

/// The deadlock's lock and message, which names the cycle: `parts` (locks and owners) in quotes.
fn deadlock(result: Result<impl std::fmt::Debug, Error>, started: Instant, parts: &[&str]) -> (Option<String>, String) {
    assert!(started.elapsed() < ANSWERED_WITHIN, "answered before the wait timeout");
    match result {
        Err(Error::Deadlock { name, message, .. }) => {
            assert!(message.starts_with("deadlock: "), "{message}");
            for part in parts {
                assert!(
                    message.contains(&format!("\"{part}\"")),
                    "the message names {part}: {message}"
                );
            }
            (name, message)
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[tokio::test]
async fn a_hold_ended_by_a_deadlock_then_the_other_is_granted() {
    let client = client().await;
    let (a, b) = (random_name("deadlock-a"), random_name("deadlock-b"));
    let (first, second) = (random_name("first"), random_name("second"));
    let held_a = client.hold(&a, as_owner(&first, Duration::ZERO)).await.unwrap();
    let held_b = client.hold(&b, as_owner(&second, Duration::ZERO)).await.unwrap();
    let first_waits = tokio::spawn({
        let (client, b, first) = (client.clone(), b.clone(), first.clone());
        async move { client.hold(&b, as_owner(&first, WAIT)).await }
    });
    until_queued(&client, &b).await;
    let started = Instant::now();
    let ended = client.hold(&a, as_owner(&second, WAIT)).await;
    let (name, message) = deadlock(ended, started, &[&a, &b, &first, &second]);
    assert_eq!(name.as_deref(), Some(a.as_str()));
    let shown = Error::Deadlock {
        addr: client.addr().to_string(),
        name,
        message: message.clone(),
    };
    assert!(shown.to_string().contains(&message) && shown.to_string().contains(client.addr()));
    assert!(!first_waits.is_finished(), "the older wait goes on");
    held_b.release().await.unwrap(); // the aborted side gives back what it holds
    let granted = tokio::time::timeout(ANSWERED_WITHIN, first_waits)
        .await
        .expect("the other wait was granted")
        .unwrap()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(granted.name(), b);
    granted.release().await.unwrap();
    held_a.release().await.unwrap();
}

#[tokio::test]
async fn an_acquire_ended_by_a_deadlock() {
    let client = client().await;
    let (a, b) = (random_name("deadlock-a"), random_name("deadlock-b"));
    let (first, second) = (random_name("first"), random_name("second"));
    let held_a = client.acquire(&a, &as_owner(&first, Duration::ZERO)).await.unwrap();
    let held_b = client.acquire(&b, &as_owner(&second, Duration::ZERO)).await.unwrap();
    let first_waits = tokio::spawn({
        let (client, b, first) = (client.clone(), b.clone(), first.clone());
        async move { client.acquire(&b, &as_owner(&first, WAIT)).await }
    });
    until_queued(&client, &b).await;
    let started = Instant::now();
    let ended = client.acquire(&a, &as_owner(&second, WAIT)).await;
    let (name, _) = deadlock(ended, started, &[&a, &b, &first, &second]);
    assert_eq!(name.as_deref(), Some(a.as_str()));
    assert!(client.release(&held_b).await.unwrap().released);
    let granted = tokio::time::timeout(ANSWERED_WITHIN, first_waits)
        .await
        .expect("the other wait was granted")
        .unwrap()
        .unwrap_or_else(|e| panic!("{e}"));
    client.release(&granted).await.unwrap();
    client.release(&held_a).await.unwrap();
}

/// Two sessions and no owners: each session is the identity (`session:...` in the message).
#[tokio::test]
async fn a_session_hold_ended_by_a_deadlock() {
    let client = client().await;
    let (a, b) = (random_name("deadlock-a"), random_name("deadlock-b"));
    let now = LockOptions {
        ttl: Duration::from_secs(30),
        ..Default::default()
    };
    let waiting = LockOptions {
        wait: WAIT,
        ..now.clone()
    };
    let one = client.session(SessionOptions::default()).await.unwrap();
    let two = client.session(SessionOptions::default()).await.unwrap();
    let _held_a = one.hold(&a, now.clone()).await.unwrap();
    let held_b = two.hold(&b, now.clone()).await.unwrap();
    let one_waits = tokio::spawn({
        let (one, b, waiting) = (one.clone(), b.clone(), waiting.clone());
        async move { one.hold(&b, waiting).await }
    });
    until_queued(&client, &b).await;
    let started = Instant::now();
    let ended = two.hold(&a, waiting).await;
    let (name, message) = deadlock(ended, started, &[&a, &b]);
    assert_eq!(name.as_deref(), Some(a.as_str()));
    assert!(message.contains("owner \"session:"), "{message}");
    assert!(two.is_open(), "a deadlock ends the wait, not the session");
    held_b.release().await.unwrap();
    let granted = tokio::time::timeout(ANSWERED_WITHIN, one_waits)
        .await
        .expect("the other wait was granted")
        .unwrap()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(granted.name(), b);
    one.close().await.unwrap();
    two.close().await.unwrap();
}

/// Negative control: a wait longer than the server's --deadlock-timeout-ms (1 s by default) with
/// no cycle behind it ends at its own timeout, not as a deadlock.
#[tokio::test]
async fn no_cycle_no_deadlock() {
    let client = client().await;
    let a = random_name("no-cycle");
    let held = client
        .hold(&a, as_owner(&random_name("holder"), Duration::ZERO))
        .await
        .unwrap();
    let waited = client
        .hold(&a, as_owner(&random_name("waiter"), Duration::from_millis(2500)))
        .await;
    assert!(matches!(waited, Err(Error::NotAcquired { .. })), "{waited:?}");
    held.release().await.unwrap();
}
