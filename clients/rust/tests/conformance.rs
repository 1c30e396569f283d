//! The repository's language-neutral tables (clients/conformance) against this crate: the lease
//! deadline (lease-deadline.json), the session deadline (session-deadline.json), the fence's wire
//! form (fencing.json) and when an error is a deadlock (deadlock.json, `holdfast::is_deadlock`),
//! each rule with wrong rules as negative controls; and the crate's copy of the proto files
//! against the repository's.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use holdfast::deadline::{DRIFT_FIXED, DRIFT_RATE, LeaseClock, SessionAnchors, drift_margin, lease_deadline};
use serde::Deserialize;

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

fn table<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let path = repo_file(&format!("clients/conformance/{name}"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The tables' ms as instants after an arbitrary origin, to the nanosecond.
struct Clock(Instant);

impl Clock {
    fn at(&self, ms: f64) -> Instant {
        self.0 + Duration::from_nanos((ms * 1e6).round() as u64)
    }
    fn ms(&self, t: Instant) -> f64 {
        t.duration_since(self.0).as_nanos() as f64 / 1e6
    }
}

fn ms(ms: i64) -> Duration {
    Duration::from_millis(ms as u64)
}

// ---- lease-deadline.json ----

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeaseTable {
    precision_ms: f64,
    drift: Drift,
    drift_margin: Vec<MarginRow>,
    cases: Vec<LeaseCase>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Drift {
    fixed_ms: f64,
    rate: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MarginRow {
    counted_ms: f64,
    margin_ms: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeaseCase {
    name: String,
    sent_at_ms: f64,
    steps: Vec<LeaseStep>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeaseStep {
    at_ms: f64,
    event: String,
    #[serde(default)]
    lease_started_after_ms: i64,
    #[serde(default)]
    ttl_ms: i64,
    expect: String,
    deadline_ms: Option<f64>,
}

/// The lease rule in parts, so that a negative control can swap one out: how a confirmation's
/// deadline is computed, and how the kept deadline takes confirmations and looks.
trait LeaseRule {
    fn deadline(&self, sent_at: Instant, started: Duration, ttl: Duration) -> Instant {
        lease_deadline(sent_at, started, ttl)
    }
    /// Returns whether the lease is held after a confirmation (`Some`) or a look (`None`) at `now`.
    fn step(&self, clock: &mut LeaseClock, confirmed: Option<Instant>, now: Instant) -> bool {
        match confirmed {
            Some(deadline) => clock.confirm(deadline, now),
            None => clock.look(now),
        }
    }
}

/// The crate's rule: `lease_deadline` and `LeaseClock`, which every lease applies.
struct Sdk;
impl LeaseRule for Sdk {}

/// Plays every case; one line per step whose outcome differs.
fn lease_mismatches(table: &LeaseTable, rule: &dyn LeaseRule) -> Vec<String> {
    let clock = Clock(Instant::now());
    let mut found = Vec::new();
    for case in &table.cases {
        let mut kept = LeaseClock::default();
        let mut lost = false;
        for (i, step) in case.steps.iter().enumerate() {
            if !lost {
                let confirmed = (step.event != "look").then(|| {
                    rule.deadline(
                        clock.at(case.sent_at_ms),
                        ms(step.lease_started_after_ms),
                        ms(step.ttl_ms),
                    )
                });
                lost = !rule.step(&mut kept, confirmed, clock.at(step.at_ms));
            }
            let got = if lost { "lost" } else { "held" };
            let kept_ms = kept.deadline().map(|d| clock.ms(d));
            let deadline_ok = match (step.deadline_ms, kept_ms) {
                (Some(want), Some(got)) => (got - want).abs() <= table.precision_ms,
                _ => false,
            };
            if got != step.expect || (!lost && !deadline_ok) {
                found.push(format!(
                    "{}, step {}: {got} (deadline {kept_ms:?}), want {} {:?}",
                    case.name,
                    i + 1,
                    step.expect,
                    step.deadline_ms
                ));
            }
        }
    }
    found
}

#[test]
fn lease_conformance_drift_allowance() {
    let table: LeaseTable = table("lease-deadline.json");
    assert_eq!(DRIFT_FIXED.as_secs_f64() * 1000.0, table.drift.fixed_ms);
    assert_eq!(DRIFT_RATE, table.drift.rate);
    for row in &table.drift_margin {
        let got = drift_margin(Duration::from_nanos((row.counted_ms * 1e6) as u64)).as_nanos() as f64 / 1e6;
        assert!(
            (got - row.margin_ms).abs() <= table.precision_ms,
            "drift_margin({} ms) = {got} ms, want {}",
            row.counted_ms,
            row.margin_ms
        );
    }
}

#[test]
fn lease_conformance_cases() {
    let table: LeaseTable = table("lease-deadline.json");
    assert!(!table.cases.is_empty(), "lease-deadline.json has no cases");
    let found = lease_mismatches(&table, &Sdk);
    assert!(found.is_empty(), "lease-deadline.json:\n{}", found.join("\n"));
}

struct NoDrift;
impl LeaseRule for NoDrift {
    fn deadline(&self, sent_at: Instant, started: Duration, ttl: Duration) -> Instant {
        sent_at + started + ttl
    }
}

struct FixedOnly;
impl LeaseRule for FixedOnly {
    fn deadline(&self, sent_at: Instant, started: Duration, ttl: Duration) -> Instant {
        sent_at + started + ttl - DRIFT_FIXED
    }
}

/// The latest confirmation wins, even one with an earlier deadline.
struct LatestWins;
impl LeaseRule for LatestWins {
    fn step(&self, clock: &mut LeaseClock, confirmed: Option<Instant>, now: Instant) -> bool {
        if let Some(deadline) = confirmed {
            *clock = LeaseClock::default();
            return clock.confirm(deadline, now);
        }
        clock.look(now)
    }
}

/// A lease still held at its deadline.
struct HeldAtDeadline;
impl LeaseRule for HeldAtDeadline {
    fn step(&self, clock: &mut LeaseClock, confirmed: Option<Instant>, now: Instant) -> bool {
        let earlier = now
            .checked_sub(Duration::from_nanos(1))
            .expect("the table's times are after the origin");
        match confirmed {
            Some(deadline) => clock.confirm(deadline, earlier),
            None => clock.look(earlier),
        }
    }
}

/// Negative controls: a rule wrong in one way must miss at least one case.
#[test]
fn lease_conformance_wrong_rules_miss_a_case() {
    let table: LeaseTable = table("lease-deadline.json");
    let wrong: [(&str, &dyn LeaseRule); 4] = [
        ("no drift allowance", &NoDrift),
        ("only the fixed 5 ms allowance", &FixedOnly),
        ("the latest confirmation wins, even an earlier deadline", &LatestWins),
        ("a lease still held at its deadline", &HeldAtDeadline),
    ];
    for (what, rule) in wrong {
        assert!(
            !lease_mismatches(&table, rule).is_empty(),
            "a rule with {what} agrees with every case"
        );
    }
}

// ---- session-deadline.json ----

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionTable {
    precision_ms: f64,
    cases: Vec<SessionCase>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionCase {
    name: String,
    opened_at_ms: f64,
    pongs: Vec<Pong>,
    renewed: Renewed,
    deadline_ms: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pong {
    sent_at_ms: f64,
    received_after_ms: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Renewed {
    lease_started_after_ms: i64,
    ttl_ms: i64,
}

/// The session rule: the deadline a renewal vouches for, given the open and the pongs in the
/// order they arrived.
trait SessionRule {
    fn deadline(&self, opened: Instant, pongs: &[(Instant, Duration)], started: Duration, ttl: Duration) -> Instant;
}

/// The crate's rule: `SessionAnchors`, which every session applies.
impl SessionRule for Sdk {
    fn deadline(&self, opened: Instant, pongs: &[(Instant, Duration)], started: Duration, ttl: Duration) -> Instant {
        let mut anchors = SessionAnchors::new(opened);
        for &(sent_at, received_after) in pongs {
            anchors.add_pong(sent_at, received_after);
        }
        anchors.deadline(started, ttl)
    }
}

fn session_mismatches(table: &SessionTable, rule: &dyn SessionRule) -> Vec<String> {
    let clock = Clock(Instant::now());
    let mut found = Vec::new();
    for case in &table.cases {
        let pongs: Vec<_> = case
            .pongs
            .iter()
            .map(|p| (clock.at(p.sent_at_ms), ms(p.received_after_ms)))
            .collect();
        let got = rule.deadline(
            clock.at(case.opened_at_ms),
            &pongs,
            ms(case.renewed.lease_started_after_ms),
            ms(case.renewed.ttl_ms),
        );
        let got_ms = clock.ms(got);
        if (got_ms - case.deadline_ms).abs() > table.precision_ms {
            found.push(format!("{}: deadline {got_ms}, want {}", case.name, case.deadline_ms));
        }
    }
    found
}

#[test]
fn session_deadline_conformance_cases() {
    let table: SessionTable = table("session-deadline.json");
    assert!(!table.cases.is_empty(), "session-deadline.json has no cases");
    let found = session_mismatches(&table, &Sdk);
    assert!(found.is_empty(), "session-deadline.json:\n{}", found.join("\n"));
}

/// An anchor: when this side sent it, and when the server received it after the stream's start.
type Anchor = (Instant, Duration);

/// A wrong session rule built from its anchors (the open first) and how it counts from each.
struct Wrong {
    anchors: fn(opened: Instant, pongs: &[Anchor]) -> Vec<Anchor>,
    pick: fn(anchors: &[Anchor], started: Duration, ttl: Duration) -> Instant,
}

impl SessionRule for Wrong {
    fn deadline(&self, opened: Instant, pongs: &[(Instant, Duration)], started: Duration, ttl: Duration) -> Instant {
        (self.pick)(&(self.anchors)(opened, pongs), started, ttl)
    }
}

fn all_anchors(opened: Instant, pongs: &[(Instant, Duration)]) -> Vec<(Instant, Duration)> {
    std::iter::once((opened, Duration::ZERO))
        .chain(pongs.iter().copied())
        .collect()
}

fn latest_usable(anchors: &[(Instant, Duration)], started: Duration, ttl: Duration) -> Instant {
    anchors
        .iter()
        .filter(|a| a.1 <= started)
        .map(|&(sent, received)| lease_deadline(sent, started - received, ttl))
        .max()
        .unwrap()
}

/// Negative controls: a rule wrong in one way must miss at least one case.
#[test]
fn session_deadline_conformance_wrong_rules_miss_a_case() {
    let table: SessionTable = table("session-deadline.json");
    let wrong = [
        (
            "pongs ignored (counted from the open only)",
            Wrong {
                anchors: |opened, _| vec![(opened, Duration::ZERO)],
                pick: latest_usable,
            },
        ),
        (
            "a pong received after the renewal started counted",
            Wrong {
                anchors: all_anchors,
                pick: |anchors, started, ttl| {
                    // saturating: an anchor received after the start counts as if received at it
                    anchors
                        .iter()
                        .map(|&(sent, received)| lease_deadline(sent, started.saturating_sub(received), ttl))
                        .max()
                        .unwrap()
                },
            },
        ),
        (
            "the latest usable anchor wins, even an earlier deadline",
            Wrong {
                anchors: all_anchors,
                pick: |anchors, started, ttl| {
                    let &(sent, received) = anchors.iter().rev().find(|a| a.1 <= started).unwrap();
                    lease_deadline(sent, started - received, ttl)
                },
            },
        ),
        (
            "only the latest pong kept",
            Wrong {
                anchors: |opened, pongs| {
                    std::iter::once((opened, Duration::ZERO))
                        .chain(pongs.last().copied())
                        .collect()
                },
                pick: latest_usable,
            },
        ),
        (
            "no drift allowance",
            Wrong {
                anchors: all_anchors,
                pick: |anchors, started, ttl| {
                    anchors
                        .iter()
                        .filter(|a| a.1 <= started)
                        .map(|&(sent, received)| sent + (started - received) + ttl)
                        .max()
                        .unwrap()
                },
            },
        ),
    ];
    for (what, rule) in &wrong {
        assert!(
            !session_mismatches(&table, rule).is_empty(),
            "a rule with {what} agrees with every case"
        );
    }
}

// ---- fencing.json: the holder's side ----

#[derive(Deserialize)]
struct FencingTable {
    wire: Wire,
    attach: Vec<AttachCase>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    grpc_metadata: Pair,
    http_headers: Pair,
}

#[derive(Deserialize)]
struct Pair {
    lock: String,
    token: String,
}

#[derive(Deserialize)]
struct AttachCase {
    name: String,
    lock: String,
    token: String,
    headers: Pair,
}

#[test]
fn fencing_conformance_attach() {
    let table: FencingTable = table("fencing.json");
    assert_eq!(holdfast::fence::HTTP_LOCK_HEADER, table.wire.http_headers.lock);
    assert_eq!(holdfast::fence::HTTP_TOKEN_HEADER, table.wire.http_headers.token);
    assert_eq!(holdfast::fence::GRPC_LOCK_KEY, table.wire.grpc_metadata.lock);
    assert_eq!(holdfast::fence::GRPC_TOKEN_KEY, table.wire.grpc_metadata.token);
    assert!(!table.attach.is_empty(), "fencing.json has no attach cases");
    for case in &table.attach {
        let fence = holdfast::Fence::new(&case.lock, case.token.parse().expect("a uint64 token"));
        assert_eq!(
            (fence.lock.as_str(), fence.token.as_str()),
            (case.headers.lock.as_str(), case.headers.token.as_str()),
            "{}",
            case.name
        );
        let mut headers = http::HeaderMap::new();
        fence.set_headers(&mut headers);
        assert_eq!(
            headers[table.wire.http_headers.lock.as_str()],
            case.headers.lock.as_str(),
            "{}",
            case.name
        );
        assert_eq!(
            headers[table.wire.http_headers.token.as_str()],
            case.headers.token.as_str(),
            "{}",
            case.name
        );
        let mut metadata = tonic::metadata::MetadataMap::new();
        fence.set_metadata(&mut metadata);
        assert_eq!(
            metadata.get(table.wire.grpc_metadata.lock.as_str()).unwrap(),
            case.headers.lock.as_str(),
            "{}",
            case.name
        );
        assert_eq!(
            metadata.get(table.wire.grpc_metadata.token.as_str()).unwrap(),
            case.headers.token.as_str(),
            "{}",
            case.name
        );
    }
}

// ---- deadlock.json ----

#[derive(Deserialize)]
struct DeadlockTable {
    cases: Vec<DeadlockCase>,
}

#[derive(Deserialize)]
struct DeadlockCase {
    name: String,
    code: i32,
    metadata: std::collections::BTreeMap<String, String>,
    message: String,
    deadlock: bool,
}

impl DeadlockCase {
    fn status(&self) -> tonic::Status {
        let mut metadata = tonic::metadata::MetadataMap::new();
        for (key, value) in &self.metadata {
            let key = tonic::metadata::MetadataKey::from_bytes(key.as_bytes()).expect("a metadata key");
            metadata.insert(key, value.parse().expect("an ASCII metadata value"));
        }
        tonic::Status::with_metadata(tonic::Code::from_i32(self.code), self.message.clone(), metadata)
    }
}

/// A deadlock rule, so that a negative control can swap in a wrong one.
type DeadlockRule = dyn Fn(&tonic::Status) -> bool;

/// One line per case that `rule` decides otherwise than the table.
fn deadlock_mismatches(cases: &[DeadlockCase], rule: &DeadlockRule) -> Vec<String> {
    cases
        .iter()
        .filter(|case| rule(&case.status()) != case.deadlock)
        .map(|case| format!("{}: deadlock should be {}", case.name, case.deadlock))
        .collect()
}

#[test]
fn deadlock_conformance_cases() {
    let table: DeadlockTable = table("deadlock.json");
    assert!(!table.cases.is_empty(), "deadlock.json has no cases");
    assert_eq!(
        deadlock_mismatches(&table.cases, &holdfast::is_deadlock),
        Vec::<String>::new()
    );
}

#[test]
fn deadlock_conformance_wrong_rules_miss_a_case() {
    let table: DeadlockTable = table("deadlock.json");
    let aborted = |s: &tonic::Status| s.code() == tonic::Code::Aborted;
    let reason = |s: &tonic::Status| {
        s.metadata()
            .get("holdfast-reason")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let wrong: Vec<(&str, Box<DeadlockRule>)> = vec![
        ("any ABORTED", Box::new(aborted)),
        (
            "metadata only",
            Box::new(move |s| aborted(s) && reason(s).as_deref() == Some("deadlock")),
        ),
        (
            "prefix anywhere in the message",
            Box::new(move |s| {
                aborted(s) && (reason(s).as_deref() == Some("deadlock") || s.message().contains("deadlock: "))
            }),
        ),
        (
            "the reason case-folded",
            Box::new(move |s| {
                aborted(s)
                    && (reason(s).is_some_and(|r| r.eq_ignore_ascii_case("deadlock"))
                        || s.message().starts_with("deadlock: "))
            }),
        ),
        (
            "any code",
            Box::new(move |s| reason(s).as_deref() == Some("deadlock") || s.message().starts_with("deadlock: ")),
        ),
    ];
    for (what, rule) in &wrong {
        assert!(
            !deadlock_mismatches(&table.cases, rule.as_ref()).is_empty(),
            "a rule with {what} agrees with every case"
        );
    }
}
