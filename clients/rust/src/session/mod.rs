//! A session: one Session stream (docs/sessions.md) that carries many operations, each with an
//! op_id this client picks, answered in any order. Locks held under it are renewed together, with
//! one `renewed` message per renewal tick for the whole session, and their deadlines count from
//! the session's anchors (its open and its two latest pongs).
//!
//! A session is one stream: once it has ended (closed, cut off, ended by the server) it stays
//! ended, every later operation fails with [`Error::SessionEnded`], and every lease held under it
//! is lost at once (the server keeps a vanished session's locks only until the leases it reported
//! run out). Open a new one then.

mod ops;
mod reader;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};
use tokio_stream::wrappers::UnboundedReceiverStream;

use crate::client::Client;
use crate::deadline::SessionAnchors;
use crate::diagnose::diagnose;
use crate::error::{Error, millis};
use crate::lease::LeaseShared;
use crate::v1::{SessionRequest, session_request::Op, session_response};

pub(crate) use ops::SessionHold;

/// Shapes one session. The default is fine.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    /// How long to wait for each operation's answer (plus its wait), for a ping's pong (one not
    /// answered in time means the connection is cut off: the session ends and every lease under
    /// it is lost at once) and for [`Session::close`]. Zero means the client's call timeout.
    pub call_timeout: Duration,
    /// How often the session pings while it holds locks, so that the clock-drift allowance stays
    /// about 5 ms + 0.01 % of (this + the ttl) however old the session is. Default: a minute.
    pub ping_interval: Duration,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            call_timeout: Duration::ZERO,
            ping_interval: Duration::from_secs(60),
        }
    }
}

/// What a session has received so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// `renewed` messages: one per renewal tick for all the locks held.
    pub renewed: u64,
    /// Pings answered.
    pub pongs: u64,
    /// Locks held under the session now.
    pub holds: usize,
}

/// One Session stream; see the [module](crate::session) docs. Cheap to clone: clones share the
/// stream. When every clone and every lease held under it is dropped, the stream is half-closed,
/// which ends the session cleanly (the server releases what it still holds).
#[derive(Clone)]
pub struct Session {
    pub(crate) shared: Arc<Shared>,
    pub(crate) sender: Arc<Sender>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("addr", &self.shared.addr)
            .field("stats", &self.stats())
            .finish()
    }
}

/// The writing end of the stream; dropping it half-closes the stream.
pub(crate) struct Sender {
    tx: Mutex<Option<mpsc::UnboundedSender<SessionRequest>>>,
}

impl Sender {
    /// Sends one request; false once the writing end is closed.
    fn send(&self, request: SessionRequest) -> bool {
        self.tx
            .lock()
            .expect("session sender")
            .as_ref()
            .is_some_and(|tx| tx.send(request).is_ok())
    }

    /// Half-closes the stream.
    fn close(&self) {
        self.tx.lock().expect("session sender").take();
    }
}

/// What the session's handles, its reader and its pinger share.
pub(crate) struct Shared {
    pub(crate) addr: Arc<str>,
    pub(crate) call_timeout: Duration,
    state: Mutex<State>,
    /// Wakes the reader to cancel the stream (a ping went unanswered, a close took too long).
    cut_off: tokio::sync::Notify,
    done: watch::Sender<bool>,
}

struct State {
    next_op: u64,
    pending: HashMap<u64, Pending>,
    /// The leases held under the session, by the op_id of the hold that took each.
    holds: HashMap<u64, Arc<LeaseShared>>,
    anchors: SessionAnchors,
    stats: SessionStats,
    closing: bool,
    /// Why this side cut the stream off, before the reader has seen it end.
    cut_cause: Option<String>,
    /// Why the session ended; `None` while it is open.
    ended: Option<Ended>,
}

#[derive(Clone)]
struct Ended {
    cause: String,
    /// The status the stream ended with, when the server ended it with an error.
    status: Option<(tonic::Code, String)>,
}

/// One operation in flight.
struct Pending {
    reply: oneshot::Sender<Result<Answer, Error>>,
    kind: Kind,
    what: String,
}

enum Kind {
    Plain,
    Acquire { name: String },
    Hold { name: String },
    Ping { sent_at: Instant },
}

impl Kind {
    /// The lock an acquire or a hold waits for.
    fn lock_name(&self) -> Option<&str> {
        match self {
            Kind::Acquire { name } | Kind::Hold { name } => Some(name),
            Kind::Plain | Kind::Ping { .. } => None,
        }
    }
}

/// An operation's answer: the server's result, or for a hold the lease the reader built.
enum Answer {
    Result(session_response::Result),
    Lease(crate::Lease),
}

impl Session {
    pub(crate) async fn open(client: &Client, options: SessionOptions) -> Result<Self, Error> {
        let call_timeout = if options.call_timeout.is_zero() {
            client.call_timeout
        } else {
            options.call_timeout
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let opened_at = Instant::now(); // every lease time of the session counts from no earlier than this
        let shared = Arc::new(Shared {
            addr: client.addr.clone(),
            call_timeout,
            state: Mutex::new(State {
                next_op: 0,
                pending: HashMap::new(),
                holds: HashMap::new(),
                anchors: SessionAnchors::new(opened_at),
                stats: SessionStats::default(),
                closing: false,
                cut_cause: None,
                ended: None,
            }),
            cut_off: tokio::sync::Notify::new(),
            done: watch::Sender::new(false),
        });
        let sender = Arc::new(Sender {
            tx: Mutex::new(Some(tx)),
        });
        let mut lock = client.lock.clone();
        let call = async move { lock.session(UnboundedReceiverStream::new(rx)).await };
        tokio::spawn(reader::read(shared.clone(), Arc::downgrade(&sender), call));
        tokio::spawn(ping_while_holding(
            shared.clone(),
            Arc::downgrade(&sender),
            options.ping_interval,
        ));
        let session = Self { shared, sender };
        // The first ping finds out at once whether the server takes the session (an API key, a
        // server without sessions), and gives the first anchor.
        if let Err(err) = session.ping().await {
            let status = session.shared.state().ended.as_ref().and_then(|e| e.status.clone());
            let addr = client.addr.to_string();
            return Err(match status {
                Some((code, message)) => Error::Refused {
                    addr,
                    what: "open a session".to_string(),
                    code,
                    message,
                },
                None => match diagnose(&addr, client.tls.as_ref().as_ref()).await {
                    Some(cause) => Error::Unavailable { addr, cause },
                    None => err,
                },
            });
        }
        Ok(session)
    }

    /// What the session has received, and the locks it holds now.
    pub fn stats(&self) -> SessionStats {
        let state = self.shared.state();
        SessionStats {
            holds: state.holds.len(),
            ..state.stats
        }
    }

    /// Whether the session is still open.
    pub fn is_open(&self) -> bool {
        self.shared.state().ended.is_none()
    }

    /// Resolves when the session has ended, with why.
    pub async fn ended(&self) -> Error {
        let mut done = self.shared.done.subscribe();
        let _ = done.wait_for(|done| *done).await;
        self.shared.ended_error(false)
    }

    /// Ends the session cleanly: operations in flight are answered, then the server releases every
    /// lock held under it at once. Waits for the stream's end at most the call timeout; then it
    /// cancels the stream (which frees the locks too on a live connection; otherwise they run out)
    /// and returns an error.
    pub async fn close(&self) -> Result<(), Error> {
        let op_id = {
            let mut state = self.shared.state();
            if state.ended.is_some() || state.closing {
                None
            } else {
                state.closing = true;
                state.next_op += 1;
                Some(state.next_op)
            }
        };
        if let Some(op_id) = op_id {
            self.sender.send(SessionRequest {
                op_id,
                op: Some(Op::Close(Default::default())),
                deadline_ms: 0,
            });
            self.sender.close();
        }
        let mut done = self.shared.done.subscribe();
        if tokio::time::timeout(self.shared.call_timeout, done.wait_for(|done| *done))
            .await
            .is_ok()
        {
            return Ok(());
        }
        let cause = format!(
            "it did not end within {} of close: cancelled",
            millis(self.shared.call_timeout)
        );
        self.shared.cut(&self.sender, cause.clone());
        let _ = done.wait_for(|done| *done).await;
        Err(Error::SessionEnded {
            addr: self.shared.addr.to_string(),
            cause,
            in_flight: false,
        })
    }
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("session state")
    }

    /// Cancels the stream from this side: every lease under it is lost with this cause.
    fn cut(&self, sender: &Sender, cause: String) {
        self.state().cut_cause.get_or_insert(cause);
        sender.close();
        self.cut_off.notify_one();
    }

    /// The error for an operation refused (or cut short, `in_flight`) because the session ended.
    fn ended_error(&self, in_flight: bool) -> Error {
        let state = self.state();
        let cause = match (&state.ended, state.closing) {
            (Some(ended), _) => ended.cause.clone(),
            (None, true) => "it is closing".to_string(),
            (None, false) => "it is ending".to_string(),
        };
        Error::SessionEnded {
            addr: self.addr.to_string(),
            cause,
            in_flight,
        }
    }

    /// The conservative end of a lease (re)started `started` after the stream's start, for `ttl`.
    pub(crate) fn deadline(&self, started: Duration, ttl: Duration) -> Instant {
        self.state().anchors.deadline(started, ttl)
    }

    /// Stops keeping the hold taken by `op_id`; `None` when the session no longer keeps it.
    fn forget(&self, op_id: u64) -> Option<Arc<LeaseShared>> {
        self.state().holds.remove(&op_id)
    }
}

/// Pings every `interval` while the session holds locks.
async fn ping_while_holding(shared: Arc<Shared>, sender: Weak<Sender>, interval: Duration) {
    let mut done = shared.done.subscribe();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = done.wait_for(|done| *done) => return,
        }
        if shared.state().holds.is_empty() {
            continue;
        }
        let Some(sender) = sender.upgrade() else { return };
        let session = Session {
            shared: shared.clone(),
            sender,
        };
        let _ = session.ping().await; // an unanswered ping cuts the session off
    }
}
