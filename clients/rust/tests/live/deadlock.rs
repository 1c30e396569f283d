//! Deadlocks on the live server, which detects them (docs/deadlocks.md): two callers each hold one
//! lock and wait for the other's. The younger wait ends with `Error::Deadlock` naming the cycle,
//! well before its wait timeout; once that side gives back what it holds, the other is granted.

use std::time::{Duration, Instant};

use holdfast::{Client, Error, Grant, Lease, LockOptions, Session, SessionOptions};

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

/// How the callers of a test take a lock (`who` names the caller) and give it back.
trait Taker {
    type Held: std::fmt::Debug;
    async fn take(&self, name: &str, who: &str, wait: Duration) -> Result<Self::Held, Error>;
    async fn give_back(&self, held: Self::Held);
}

/// Callers with owners, each lock through a Hold stream of its own.
struct Holds(Client);

impl Taker for Holds {
    type Held = Lease;
    async fn take(&self, name: &str, who: &str, wait: Duration) -> Result<Lease, Error> {
        self.0.hold(name, as_owner(who, wait)).await
    }
    async fn give_back(&self, held: Lease) {
        held.release().await.unwrap();
    }
}

/// Callers with owners, each lock a one-shot Acquire.
struct Acquires(Client);

impl Taker for Acquires {
    type Held = Grant;
    async fn take(&self, name: &str, who: &str, wait: Duration) -> Result<Grant, Error> {
        self.0.acquire(name, &as_owner(who, wait)).await
    }
    async fn give_back(&self, held: Grant) {
        assert!(self.0.release(&held).await.unwrap().released);
    }
}

/// Two sessions, "one" and "two", and no owners: each session is the identity.
struct SessionHolds(Session, Session);

impl Taker for SessionHolds {
    type Held = Lease;
    async fn take(&self, name: &str, who: &str, wait: Duration) -> Result<Lease, Error> {
        let session = if who == "one" { &self.0 } else { &self.1 };
        let options = LockOptions {
            ttl: Duration::from_secs(30),
            wait,
            ..Default::default()
        };
        session.hold(name, options).await
    }
    async fn give_back(&self, held: Lease) {
        held.release().await.unwrap();
    }
}

/// The cycle: `first` holds a, `second` holds b; first waits for b, then (the younger wait) second
/// for a. Second's wait must end with `Error::Deadlock` for a, well before its wait timeout, whose
/// message names both locks and `named` in quotes; once second gives b back, first is granted b.
/// Returns the deadlock's message.
async fn cycle(taker: &impl Taker, first: &str, second: &str, named: &[&str]) -> String {
    let client = client().await;
    let (a, b) = (random_name("deadlock-a"), random_name("deadlock-b"));
    let held_a = taker.take(&a, first, Duration::ZERO).await.unwrap();
    let held_b = taker.take(&b, second, Duration::ZERO).await.unwrap();
    let first_granted = std::cell::Cell::new(false);
    let first_waits = async {
        let granted = taker.take(&b, first, WAIT).await;
        first_granted.set(true);
        granted
    };
    let second_waits = async {
        // Queued before the second wait starts, so that the second is the younger one.
        wait_until(&format!("a waiter queued on {b}"), async || {
            inspect(&client, &b).await.waiters > 0
        })
        .await;
        let started = Instant::now();
        let ended = taker.take(&a, second, WAIT).await;
        assert!(started.elapsed() < ANSWERED_WITHIN, "answered before the wait timeout");
        let Err(Error::Deadlock { name, message, .. }) = ended else {
            panic!("expected a deadlock, got {ended:?}");
        };
        assert_eq!(name.as_deref(), Some(a.as_str()));
        assert!(message.starts_with("deadlock: "), "{message}");
        for part in [a.as_str(), b.as_str()].iter().chain(named) {
            assert!(
                message.contains(&format!("\"{part}\"")),
                "the message names {part}: {message}"
            );
        }
        assert!(!first_granted.get(), "the older wait goes on");
        taker.give_back(held_b).await; // the aborted side gives back what it holds
        message
    };
    let (granted, message) = tokio::join!(first_waits, second_waits);
    taker.give_back(granted.unwrap_or_else(|e| panic!("{e}"))).await;
    taker.give_back(held_a).await;
    message
}

#[tokio::test]
async fn a_hold_ended_by_a_deadlock_then_the_other_is_granted() {
    let (first, second) = (random_name("first"), random_name("second"));
    let holds = Holds(client().await);
    let message = cycle(&holds, &first, &second, &[&first, &second]).await;
    let shown = Error::Deadlock {
        addr: holds.0.addr().to_string(),
        name: Some("a".to_string()),
        message: message.clone(),
    };
    assert!(shown.to_string().contains(&message) && shown.to_string().contains(holds.0.addr()));
    assert_eq!(shown.code(), tonic::Code::Aborted);
}

#[tokio::test]
async fn an_acquire_ended_by_a_deadlock() {
    let (first, second) = (random_name("first"), random_name("second"));
    cycle(&Acquires(client().await), &first, &second, &[&first, &second]).await;
}

#[tokio::test]
async fn a_session_hold_ended_by_a_deadlock() {
    let client = client().await;
    let one = client.session(SessionOptions::default()).await.unwrap();
    let two = client.session(SessionOptions::default()).await.unwrap();
    let message = cycle(&SessionHolds(one.clone(), two.clone()), "one", "two", &[]).await;
    assert!(message.contains("owner \"session:"), "{message}");
    assert!(two.is_open(), "a deadlock ends the wait, not the session");
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
