//! The session's reader: hands each answer to its operation, moves the leases' deadlines on every
//! `renewed`, ends a lease on its `lost`, and tells everyone when the stream ends.

use std::future::Future;
use std::sync::{Arc, Weak};

use tonic::{Response, Status, Streaming};

use super::{Answer, Ended, Kind, Sender, Session, SessionHold, Shared};
use crate::client::from_ms;
use crate::error::{Error, code_in_words};
use crate::lease::{Keeper, Lease, LeaseShared};
use crate::v1::{LostReason, ReleaseRequest, SessionResponse, session_request::Op, session_response::Result as Reply};

pub(super) async fn read(
    shared: Arc<Shared>,
    sender: Weak<Sender>,
    call: impl Future<Output = Result<Response<Streaming<SessionResponse>>, Status>>,
) {
    let end = tokio::select! {
        end = async {
            let mut stream = call.await?.into_inner();
            while let Some(response) = stream.message().await? {
                dispatch(&shared, &sender, response);
            }
            Ok(())
        } => Some(end),
        // Dropping the call cancels the stream (RST_STREAM).
        _ = shared.cut_off.notified() => None,
    };
    finish(&shared, &sender, end);
}

fn dispatch(shared: &Arc<Shared>, sender: &Weak<Sender>, response: SessionResponse) {
    let op_id = response.op_id;
    match response.result {
        Some(Reply::Renewed(renewed)) => {
            // Every lease registered so far was held when this was sent: the reader registers each
            // grant before it reads on.
            let (deadline, leases) = {
                let mut state = shared.state();
                state.stats.renewed += 1;
                let deadline = state
                    .anchors
                    .deadline(from_ms(renewed.lease_started_after_ms), from_ms(renewed.ttl_ms));
                (
                    deadline,
                    state
                        .holds
                        .iter()
                        .map(|(id, lease)| (*id, lease.clone()))
                        .collect::<Vec<_>>(),
                )
            };
            for (id, lease) in leases {
                if !lease.confirm(deadline, "a renewal")
                    && let Some(session) = handle(shared, sender)
                {
                    SessionHold::let_go(&session, id, &lease);
                }
            }
        }
        Some(Reply::Lost(lost)) => {
            if let Some(lease) = shared.forget(op_id) {
                lease.end(lease.lost_with(lost.reason, LostReason::try_from(lost.code).unwrap_or_default()));
            }
        }
        Some(result) => answered(shared, sender, op_id, result),
        None => {}
    }
}

fn handle(shared: &Arc<Shared>, sender: &Weak<Sender>) -> Option<Session> {
    Some(Session {
        shared: shared.clone(),
        sender: sender.upgrade()?,
    })
}

/// Hands an answer to its operation. A pong adds an anchor; a hold's lease is built and registered
/// here, before the next message is read, so that every later renewal covers it.
fn answered(shared: &Arc<Shared>, sender: &Weak<Sender>, op_id: u64, result: Reply) {
    let mut state = shared.state();
    let Some(pending) = state.pending.remove(&op_id) else {
        return;
    };
    let answer = match (pending.kind, result) {
        (kind, Reply::Error(error)) => Err(Error::from_status(
            &shared.addr,
            pending.what,
            kind.lock_name(),
            Status::new(tonic::Code::from_i32(error.code), error.message),
        )),
        (Kind::Ping { sent_at }, Reply::Pong(pong)) => {
            state.anchors.add_pong(sent_at, from_ms(pong.received_after_ms));
            state.stats.pongs += 1;
            Ok(Answer::Result(Reply::Pong(pong)))
        }
        (Kind::Hold { name }, Reply::Hold(grant)) => {
            let Some(session) = handle(shared, sender) else { return }; // the stream is half-closed: the server frees it
            let lease = LeaseShared::new(&name, &grant);
            state.holds.insert(op_id, lease.clone());
            let deadline = state
                .anchors
                .deadline(from_ms(grant.lease_started_after_ms), from_ms(grant.ttl_ms));
            drop(state);
            lease.confirm(deadline, "the grant");
            // A lease nobody takes (the caller stopped waiting) is dropped, which gives it back.
            Ok(Answer::Lease(Lease::new(
                lease,
                Keeper::Session(SessionHold { session, op_id }),
            )))
        }
        (Kind::Acquire { name }, Reply::Acquire(grant)) if grant.acquired && pending.reply.is_closed() => {
            // The caller stopped waiting: nobody else would give this grant back.
            drop(state);
            if let Some(session) = handle(shared, sender) {
                session.send_quietly(Op::Release(ReleaseRequest {
                    name,
                    token: grant.token,
                    hold_id: String::new(),
                }));
            }
            return;
        }
        (_, result) => Ok(Answer::Result(result)),
    };
    let _ = pending.reply.send(answer);
}

/// Tells every operation in flight and every lease held why the session ended.
fn finish(shared: &Arc<Shared>, sender: &Weak<Sender>, end: Option<Result<(), Status>>) {
    if let Some(sender) = sender.upgrade() {
        sender.close();
    }
    let (pending, holds, closing, reason) = {
        let mut state = shared.state();
        let closing = state.closing;
        let ended = match end {
            None => Ended {
                cause: state.cut_cause.clone().unwrap_or_else(|| "it was cut off".to_string()),
                status: None,
            },
            Some(Ok(())) if closing => Ended {
                cause: "it was closed".to_string(),
                status: None,
            },
            Some(Ok(())) => Ended {
                cause: "the server ended the stream".to_string(),
                status: None,
            },
            Some(Err(status)) => match Error::from_status(&shared.addr, "keep the session", None, status.clone()) {
                Error::Unavailable { cause, .. } => Ended {
                    cause: format!("unavailable: {cause}"),
                    status: None,
                },
                _ => Ended {
                    cause: format!("{}: {}", code_in_words(status.code()), status.message()),
                    status: Some((status.code(), status.message().to_string())),
                },
            },
        };
        let reason = if closing {
            "the session was closed".to_string()
        } else {
            format!("the session with holdfast at {} ended ({})", shared.addr, ended.cause)
        };
        state.ended.get_or_insert(ended);
        (
            std::mem::take(&mut state.pending),
            std::mem::take(&mut state.holds),
            closing,
            reason,
        )
    };
    for (_, op) in pending {
        let _ = op.reply.send(Err(shared.ended_error(true)));
    }
    let code = if closing {
        LostReason::Released
    } else {
        LostReason::Unspecified
    };
    for (_, lease) in holds {
        lease.end(lease.lost_with(reason.clone(), code));
    }
    shared.done.send_replace(true);
}
