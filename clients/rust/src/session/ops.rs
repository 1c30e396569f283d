//! A session's operations: each is sent with an op_id of its own and waits for the answer with
//! that op_id, so many are in flight at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tonic::Code;

use super::{Answer, Kind, Pending, Session};
use crate::client::{Grant, LockOptions, from_ms};
use crate::error::{Error, millis};
use crate::lease::{Lease, LeaseShared};
use crate::v1::{self, SessionRequest, session_request::Op, session_response::Result as Reply};

impl Session {
    /// Registers an operation under a new op_id and sends it; a session that has ended refuses it.
    fn start(
        &self,
        op: Op,
        kind: Kind,
        what: String,
    ) -> Result<(u64, oneshot::Receiver<Result<Answer, Error>>), Error> {
        let (reply, answer) = oneshot::channel();
        let op_id = {
            let mut state = self.shared.state();
            if state.ended.is_some() || state.closing {
                drop(state);
                return Err(self.shared.ended_error(false));
            }
            state.next_op += 1;
            let op_id = state.next_op;
            state.pending.insert(op_id, Pending { reply, kind, what });
            op_id
        };
        // A send that fails means the stream is ending: the reader then fails the operation.
        self.sender.send(SessionRequest {
            op_id,
            op: Some(op),
            deadline_ms: 0,
        });
        Ok((op_id, answer))
    }

    /// Sends an operation whose answer nobody waits for.
    pub(super) fn send_quietly(&self, op: Op) {
        let op_id = {
            let mut state = self.shared.state();
            state.next_op += 1;
            state.next_op
        };
        self.sender.send(SessionRequest {
            op_id,
            op: Some(op),
            deadline_ms: 0,
        });
    }

    /// Runs one operation: its answer, the server's error as the unary call's, or
    /// `DeadlineExceeded` after the call timeout plus `wait` (the operation is then cancelled on
    /// the session, as it is when the caller drops this future).
    async fn call(&self, op: Op, kind: Kind, wait: Duration, what: String) -> Result<Answer, Error> {
        let (op_id, mut answer) = self.start(op, kind, what.clone())?;
        let mut in_flight = CancelOnDrop { session: self, op_id };
        let limit = self.shared.call_timeout + wait;
        let result = match tokio::time::timeout(limit, &mut answer).await {
            Ok(answer) => answer.map_err(|_| oneshot::error::TryRecvError::Closed),
            Err(_) => answer.try_recv(), // answered as the time ran out: the answer counts
        };
        match result {
            Ok(result) => {
                in_flight.op_id = 0;
                result
            }
            Err(oneshot::error::TryRecvError::Empty) => Err(Error::Refused {
                addr: self.shared.addr.to_string(),
                what,
                code: Code::DeadlineExceeded,
                message: format!("no answer on the session within {}", millis(limit)),
            }),
            Err(oneshot::error::TryRecvError::Closed) => Err(self.shared.ended_error(true)),
        }
    }

    /// Sends a ping and waits for its pong, which re-anchors the deadlines of the leases held
    /// under the session. A pong not back within the call timeout means the connection is cut
    /// off: the session is cancelled and every lease under it is lost at once.
    pub async fn ping(&self) -> Result<(), Error> {
        let sent_at = Instant::now(); // no later than the ping leaves
        let (_, answer) = self.start(Op::Ping(Default::default()), Kind::Ping { sent_at }, "ping".to_string())?;
        match tokio::time::timeout(self.shared.call_timeout, answer).await {
            Ok(Ok(result)) => result.map(|_| ()),
            Ok(Err(_)) => Err(self.shared.ended_error(true)),
            Err(_) => {
                let cause = format!(
                    "no pong within {}: the connection is cut off",
                    millis(self.shared.call_timeout)
                );
                self.shared.cut(&self.sender, cause);
                Err(self.shared.ended_error(true))
            }
        }
    }

    /// Takes `name` under the session and keeps it until the [`Lease`] is released, dropped or
    /// lost, or the session ends. The lease's deadline counts from the session's anchors and moves
    /// with its `renewed` messages. [`Error::NotAcquired`] when it is not granted within
    /// `options.wait`; [`Error::Deadlock`] when the server ended the wait to break a deadlock.
    pub async fn hold(&self, name: &str, options: LockOptions) -> Result<Lease, Error> {
        let op = Op::Hold(options.hold_request(name));
        let what = format!("hold lock \"{name}\"");
        match self
            .call(op, Kind::Hold { name: name.to_string() }, options.wait, what)
            .await
        {
            Ok(Answer::Lease(lease)) => match lease.lost_error() {
                None => Ok(lease),
                Some(lost) => Err(Error::Lost(lost)), // granted too late: dropping the lease gives it back
            },
            Ok(Answer::Result(other)) => Err(self.unexpected("hold", other)),
            Err(Error::Refused {
                code: Code::DeadlineExceeded,
                ..
            }) => Err(Error::NotAcquired {
                name: name.to_string(),
                wait: options.wait,
            }),
            Err(err) => Err(err),
        }
    }

    /// Takes a grant over the session, with its own lease that nothing renews (it outlives the
    /// session, like [`Client::acquire`](crate::Client::acquire)'s). [`Error::NotAcquired`] or
    /// [`Error::Deadlock`] as for a hold.
    pub async fn acquire(&self, name: &str, options: &LockOptions) -> Result<Grant, Error> {
        let what = format!("acquire lock \"{name}\"");
        let answer = self
            .call(
                Op::Acquire(options.acquire_request(name)),
                Kind::Acquire { name: name.to_string() },
                options.wait,
                what,
            )
            .await?;
        let Answer::Result(Reply::Acquire(answer)) = answer else {
            return Err(self.unexpected_answer("acquire", answer));
        };
        if !answer.acquired {
            return Err(Error::NotAcquired {
                name: name.to_string(),
                wait: options.wait,
            });
        }
        // Its lease time counts from the session's start, as a hold's does.
        let deadline = self
            .shared
            .deadline(from_ms(answer.lease_started_after_ms), from_ms(answer.ttl_ms));
        Ok(Grant::new(name, answer, deadline))
    }

    /// Releases one hold of a grant over the session. A lease held under the session is given
    /// back with [`Lease::release`] instead.
    pub async fn release(&self, grant: &Grant) -> Result<v1::ReleaseResponse, Error> {
        let request = grant.release_request();
        let what = format!("release lock \"{}\"", grant.name);
        match self
            .call(Op::Release(request), Kind::Plain, Duration::ZERO, what)
            .await?
        {
            Answer::Result(Reply::Release(answer)) => Ok(answer),
            other => Err(self.unexpected_answer("release", other)),
        }
    }

    /// Renews a grant over the session for `ttl` from now (zero keeps its lease length).
    pub async fn renew(&self, grant: &mut Grant, ttl: Duration) -> Result<(), Error> {
        let sent_at = Instant::now();
        let what = format!("renew lock \"{}\"", grant.name);
        match self
            .call(Op::Renew(grant.renew_request(ttl)), Kind::Plain, Duration::ZERO, what)
            .await?
        {
            Answer::Result(Reply::Renew(answer)) => {
                grant.renewed(sent_at, &answer);
                Ok(())
            }
            other => Err(self.unexpected_answer("renew", other)),
        }
    }

    /// A lock's holders, waiters and latest fencing token, over the session.
    pub async fn inspect(&self, name: &str) -> Result<v1::InspectResponse, Error> {
        let request = v1::InspectRequest { name: name.to_string() };
        let what = format!("inspect lock \"{name}\"");
        match self
            .call(Op::Inspect(request), Kind::Plain, Duration::ZERO, what)
            .await?
        {
            Answer::Result(Reply::Inspect(answer)) => Ok(answer),
            other => Err(self.unexpected_answer("inspect", other)),
        }
    }

    fn unexpected_answer(&self, op: &str, answer: Answer) -> Error {
        match answer {
            Answer::Result(result) => self.unexpected(op, result),
            Answer::Lease(_) => self.unexpected(op, Reply::Hold(Default::default())),
        }
    }

    fn unexpected(&self, op: &str, result: Reply) -> Error {
        Error::Refused {
            addr: self.shared.addr.to_string(),
            what: op.to_string(),
            code: Code::Internal,
            message: format!("the session answered {op} with {result:?}"),
        }
    }
}

/// Cancels an operation on the session when the caller stops waiting for it (the future was
/// dropped, or the time ran out) before its answer came; a grant answered after that is given back
/// by the reader, as nobody takes it.
struct CancelOnDrop<'a> {
    session: &'a Session,
    op_id: u64,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.op_id != 0 && self.session.shared.state().pending.contains_key(&self.op_id) {
            self.session.send_quietly(Op::Cancel(self.op_id));
        }
    }
}

/// What keeps one lease under a session: the session (whose stream stays open while the lease
/// lives) and the op_id of the hold that took it.
pub(crate) struct SessionHold {
    pub(crate) session: Session,
    pub(crate) op_id: u64,
}

impl SessionHold {
    fn release_op(lease: &LeaseShared) -> Op {
        Op::Release(v1::ReleaseRequest {
            name: lease.name.clone(),
            token: lease.token.clone(),
            hold_id: lease.hold_id.clone(),
        })
    }

    /// Gives back exactly this hold over the session, waiting for the answer when it is held.
    /// Forgotten first, so that the server's `lost` (RELEASED) that follows is not taken for a loss.
    pub(crate) async fn give_back(self, lease: &Arc<LeaseShared>, held: bool) -> Result<(), Error> {
        if self.session.shared.forget(self.op_id).is_none() {
            return Ok(()); // the session no longer keeps it: it ended, or reported the hold lost
        }
        if !held {
            self.session.send_quietly(Self::release_op(lease));
            return Ok(());
        }
        let what = format!("release lock \"{}\"", lease.name);
        match self
            .session
            .call(Self::release_op(lease), Kind::Plain, Duration::ZERO, what)
            .await
        {
            Err(Error::SessionEnded { .. }) if self.session.shared.state().closing => Ok(()), // closing frees every lock
            result => result.map(|_| ()),
        }
    }

    /// Gives the hold back without waiting (a dropped lease).
    pub(crate) fn give_back_in_background(self, lease: &LeaseShared) {
        if self.session.shared.forget(self.op_id).is_some() {
            self.session.send_quietly(Self::release_op(lease));
        }
    }

    /// The hold's lease was found lost on this side (a grant or renewal came too late) while the
    /// session still keeps it: nobody counts on it any more, so give it back.
    pub(crate) fn let_go(session: &Session, op_id: u64, lease: &LeaseShared) {
        if session.shared.forget(op_id).is_some() {
            session.send_quietly(Self::release_op(lease));
        }
    }
}
