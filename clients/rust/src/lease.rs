//! A held lock: the guard [`Lease`] and the state its keeper (a Hold stream or a session) and the
//! guard share.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{oneshot, watch};

use crate::deadline::LeaseClock;
use crate::error::{Error, LostError};
use crate::session::SessionHold;
use crate::v1::{HoldAcquired, LostReason};

fn signed(fence: &str) -> Option<Arc<str>> {
    (!fence.is_empty()).then(|| fence.into())
}

pub(crate) const LOCAL_DEADLINE_REASON: &str = "no renewal was confirmed before the local deadline";

/// What the keeper and the guard of one lease share: the grant, its deadline, and why it ended.
pub(crate) struct LeaseShared {
    pub(crate) name: String,
    pub(crate) token: String,
    pub(crate) hold_id: String,
    pub(crate) fencing_token: u64,
    status: watch::Sender<Status>,
}

#[derive(Clone, Default)]
struct Status {
    clock: LeaseClock,
    ended: Option<LostError>,
    /// The latest signed fence: the grant's, then each re-signing renewal's.
    signed_fence: Option<Arc<str>>,
}

impl LeaseShared {
    pub(crate) fn new(name: &str, grant: &HoldAcquired) -> Arc<Self> {
        Arc::new(Self {
            name: name.to_string(),
            token: grant.token.clone(),
            hold_id: grant.hold_id.clone(),
            fencing_token: grant.fencing_token,
            status: watch::Sender::new(Status {
                signed_fence: signed(&grant.signed_fence),
                ..Status::default()
            }),
        })
    }

    /// Keeps a renewal's fresh signed fence (a Hold's renewals re-sign; a session's do not).
    pub(crate) fn resigned(&self, fences: &[String]) {
        if let Some(fresh) = fences.first().and_then(|fence| signed(fence)) {
            self.status.send_if_modified(|status| {
                status.signed_fence = Some(fresh);
                false
            });
        }
    }

    pub(crate) fn signed_fence(&self) -> Option<Arc<str>> {
        self.status.borrow().signed_fence.clone()
    }

    /// Moves the deadline to what a grant or renewal vouches for; a confirmation whose deadline
    /// has already passed ends the lease. Returns whether the lease is still held.
    pub(crate) fn confirm(&self, deadline: Instant, what: &str) -> bool {
        let mut held = false;
        self.status.send_if_modified(|status| {
            if status.ended.is_some() {
                return false;
            }
            held = status.clock.confirm(deadline, Instant::now());
            if !held {
                status.ended = Some(self.lost_locally(format!("{what} arrived after the lease could have ended")));
            }
            true
        });
        held
    }

    /// Ends the lease (the first reason wins).
    pub(crate) fn end(&self, why: LostError) {
        self.status.send_if_modified(|status| {
            if status.ended.is_some() {
                return false;
            }
            status.ended = Some(why);
            true
        });
    }

    /// Why the lease has ended, looking at the clock first: a process paused past the deadline
    /// finds the lease lost at its first look.
    pub(crate) fn ended(&self) -> Option<LostError> {
        self.status.send_if_modified(|status| {
            if status.ended.is_some() || status.clock.look(Instant::now()) {
                return false;
            }
            status.ended = Some(self.lost_locally(LOCAL_DEADLINE_REASON.to_string()));
            true
        });
        self.status.borrow().ended.clone()
    }

    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.status.borrow().clock.deadline()
    }

    /// Resolves when the lease ends: the keeper's news, or the local deadline passing.
    pub(crate) async fn lost(&self) -> LostError {
        let mut changes = self.status.subscribe();
        loop {
            if let Some(lost) = self.ended() {
                return lost;
            }
            let deadline = self.deadline().expect("a lease is confirmed before anyone holds it");
            tokio::select! {
                _ = changes.changed() => {}
                _ = tokio::time::sleep_until(deadline.into()) => {}
            }
        }
    }

    pub(crate) fn lost_with(&self, reason: String, code: LostReason) -> LostError {
        LostError {
            name: self.name.clone(),
            reason,
            code,
        }
    }

    fn lost_locally(&self, reason: String) -> LostError {
        self.lost_with(reason, LostReason::Unspecified)
    }
}

/// What keeps a lease on the server.
pub(crate) enum Keeper {
    /// A Hold stream of its own, kept by a background task; sending on `release` asks it to give
    /// the hold back and answer, dropping it asks the same without waiting.
    Stream {
        release: oneshot::Sender<oneshot::Sender<Result<(), Error>>>,
    },
    /// A session's stream.
    Session(SessionHold),
}

/// A held lock. The lease is renewed in the background (by its own Hold stream, or by the
/// session that took it) until [`release`](Lease::release), drop, or loss.
///
/// Dropping the guard gives the hold back without blocking: the release is handed to the
/// background task. [`lost`](Lease::lost) resolves the moment the lease may be lost (the server
/// said so, the stream ended, or the local deadline passed with no renewal confirmed): stop the
/// work it protects then.
pub struct Lease {
    pub(crate) shared: Arc<LeaseShared>,
    pub(crate) keeper: Option<Keeper>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("name", &self.shared.name)
            .field("fencing_token", &self.shared.fencing_token)
            .field("deadline", &self.deadline())
            .finish_non_exhaustive()
    }
}

impl Lease {
    pub(crate) fn new(shared: Arc<LeaseShared>, keeper: Keeper) -> Self {
        Self {
            shared,
            keeper: Some(keeper),
        }
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The grant's fencing token: send it with every write to what the lock protects (see
    /// [`fence_headers`](Lease::fence_headers)).
    pub fn fencing_token(&self) -> u64 {
        self.shared.fencing_token
    }

    /// The latest signed fence of this lease, from a server with a fence signing key: the grant's,
    /// then each Hold renewal's fresh one stating the renewed lease's end (a session's renewals are
    /// not re-signed: its fences state no lease end). A bearer credential: never log it.
    pub fn signed_fence(&self) -> Option<Arc<str>> {
        self.shared.signed_fence()
    }

    /// The grant's secret token (it works with `Release` and `Renew`). Never log it.
    pub fn token(&self) -> &str {
        &self.shared.token
    }

    /// Names this hold of the grant (a reentrant grant has one per holder).
    pub fn hold_id(&self) -> &str {
        &self.shared.hold_id
    }

    /// The conservative end of the lease: it counts as lost from then on unless a renewal moves it.
    pub fn deadline(&self) -> Instant {
        self.shared
            .deadline()
            .expect("a lease is confirmed before anyone holds it")
    }

    /// Whether the lease may be lost now (it checks the deadline first).
    pub fn is_lost(&self) -> bool {
        self.shared.ended().is_some()
    }

    /// Why the lease was lost, or `None` while it is held.
    pub fn lost_error(&self) -> Option<LostError> {
        self.shared.ended()
    }

    /// Resolves when the lease may be lost, with why; it never resolves while the lease is held.
    /// Race it against the work (`tokio::select!`) to stop the work at once.
    pub async fn lost(&self) -> LostError {
        self.shared.lost().await
    }

    /// Gives back exactly this hold (Release with its token and hold id) and waits for the answer.
    /// Returns [`Error::Lost`] when the lease had been lost before: the work done under it may not
    /// have been exclusive.
    pub async fn release(mut self) -> Result<(), Error> {
        let keeper = self.keeper.take();
        let lost = self.shared.ended();
        let result = match keeper {
            Some(Keeper::Stream { release }) => {
                let (reply, answer) = oneshot::channel();
                if release.send(reply).is_ok() {
                    answer.await.unwrap_or(Ok(()))
                } else {
                    Ok(())
                }
            }
            Some(Keeper::Session(hold)) => hold.give_back(&self.shared, lost.is_none()).await,
            None => Ok(()),
        };
        self.shared.end(
            self.shared
                .lost_with("it was released".to_string(), LostReason::Released),
        );
        match lost {
            Some(lost) => Err(Error::Lost(lost)),
            None => result,
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(Keeper::Session(hold)) = self.keeper.take() {
            hold.give_back_in_background(&self.shared);
        }
        // A Hold stream's task sees its release sender dropped and gives the hold back itself.
    }
}
