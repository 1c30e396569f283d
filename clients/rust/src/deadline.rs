//! The earliest moment a lease can end, whatever the network did meanwhile.
//!
//! The server says when, after it received the request, it started a grant or renewal
//! (`lease_started_after_ms`, its monotonic clock); Redis then counts `ttl_ms`. The request cannot
//! have been received before it was sent, so the lease ends no earlier than
//!
//! ```text
//! sent_at + lease_started_after + ttl - drift_margin(lease_started_after + ttl)
//! ```
//!
//! No assumption about how long a message spent on the way: a confirmation that arrives late only
//! yields a deadline that has already passed. `clients/conformance/lease-deadline.json` and
//! `session-deadline.json` in the holdfast repository hold the cases every SDK runs.

use std::time::{Duration, Instant};

/// The fixed part of the clock-drift allowance.
pub const DRIFT_FIXED: Duration = Duration::from_millis(5);
/// The rate part of the clock-drift allowance (100 ppm): the client, server and Redis clocks may
/// each run that much fast or slow against one another.
pub const DRIFT_RATE: f64 = 1e-4;

/// The clock-drift allowance for a lease that ends `counted` after its request was sent.
pub fn drift_margin(counted: Duration) -> Duration {
    DRIFT_FIXED + Duration::from_nanos((counted.as_nanos() as f64 * DRIFT_RATE) as u64)
}

/// The conservative end of a lease whose request was sent at `sent_at`, started
/// `lease_started_after` after the server received it, for `ttl`.
pub fn lease_deadline(sent_at: Instant, lease_started_after: Duration, ttl: Duration) -> Instant {
    let counted = lease_started_after + ttl;
    // A margin larger than what is counted (a ttl under 5 ms) leaves a deadline already passed.
    sent_at + counted.saturating_sub(drift_margin(counted))
}

/// The deadline one lease keeps: the latest any confirmation vouched for (the server never
/// shortens a lease), lost from that moment on, and lost for good once lost.
#[derive(Clone, Copy, Debug, Default)]
pub struct LeaseClock {
    kept: Option<Instant>,
    lost: bool,
}

impl LeaseClock {
    /// A confirmation (a grant or a renewal) that vouches for `deadline`, arriving at `now`.
    /// Returns whether the lease is still held.
    pub fn confirm(&mut self, deadline: Instant, now: Instant) -> bool {
        if !self.lost {
            self.kept = Some(self.kept.map_or(deadline, |kept| kept.max(deadline)));
        }
        self.look(now)
    }

    /// A look at the clock with no news. Returns whether the lease is still held.
    pub fn look(&mut self, now: Instant) -> bool {
        if self.kept.is_none_or(|kept| now >= kept) {
            self.lost = true;
        }
        !self.lost
    }

    /// The deadline kept so far (`None` before the first confirmation).
    pub fn deadline(&self) -> Option<Instant> {
        self.kept
    }
}

/// How many of its latest pongs a session keeps as anchors, besides the open: a renewal that
/// started before the latest ping was received can still count from the one before.
const PONGS_KEPT: usize = 2;

/// A moment on this side's clock (`sent_at`) and the server's time for it (`received_after`,
/// counted from the session stream's start): the open (0), or a ping and its pong.
#[derive(Clone, Copy, Debug)]
pub struct Anchor {
    /// When this client opened the stream or sent the ping.
    pub sent_at: Instant,
    /// When the server received it, after the stream's start (0 for the open).
    pub received_after: Duration,
}

/// The anchors a session counts its leases from: the open and its two latest pongs
/// (docs/sessions.md, "Locks held under a session").
#[derive(Clone, Debug)]
pub struct SessionAnchors {
    opened: Anchor,
    pongs: Vec<Anchor>,
}

impl SessionAnchors {
    /// The anchors of a stream opened at `opened_at` (read just before the call started).
    pub fn new(opened_at: Instant) -> Self {
        Self {
            opened: Anchor {
                sent_at: opened_at,
                received_after: Duration::ZERO,
            },
            pongs: Vec::new(),
        }
    }

    /// Keeps the pong of a ping sent at `sent_at`, dropping the oldest beyond two.
    pub fn add_pong(&mut self, sent_at: Instant, received_after: Duration) {
        self.pongs.push(Anchor {
            sent_at,
            received_after,
        });
        if self.pongs.len() > PONGS_KEPT {
            self.pongs.remove(0);
        }
    }

    /// The open, then the pongs kept, oldest first.
    pub fn anchors(&self) -> impl Iterator<Item = &Anchor> {
        std::iter::once(&self.opened).chain(&self.pongs)
    }

    /// The conservative end of a lease (re)started `lease_started_after` after the stream's start
    /// for `ttl`: the latest deadline any anchor vouches for. An anchor the server received after
    /// the lease started says nothing about it.
    pub fn deadline(&self, lease_started_after: Duration, ttl: Duration) -> Instant {
        self.anchors()
            .filter(|anchor| anchor.received_after <= lease_started_after)
            .map(|anchor| lease_deadline(anchor.sent_at, lease_started_after - anchor.received_after, ttl))
            .max()
            .expect("the open is received at 0, before every lease")
    }
}
