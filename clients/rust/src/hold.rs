//! One lock kept by a Hold stream of its own, read by a background task.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;
use tonic::{Code, Streaming};

use crate::client::{Client, LockOptions, from_ms};
use crate::deadline::lease_deadline;
use crate::error::{Error, code_in_words};
use crate::lease::{Keeper, Lease, LeaseShared};
use crate::v1::{self, HoldResponse, hold_response::Event};

type ReleaseReply = oneshot::Sender<Result<(), Error>>;

pub(crate) async fn hold_stream(client: &Client, name: &str, options: &LockOptions) -> Result<Lease, Error> {
    let what = || format!("hold lock \"{name}\"");
    let not_acquired = || Error::NotAcquired {
        name: name.to_string(),
        wait: options.wait,
    };
    let sent_at = Instant::now(); // every lease time of the stream counts from here
    let mut lock = client.lock.clone();
    let request = options.hold_request(name);
    // A server that never answers must not keep the caller past its wait.
    let first = tokio::time::timeout(client.call_timeout + options.wait, async move {
        let mut stream = lock.hold(request).await?.into_inner();
        let first = stream.message().await?;
        Ok::<_, tonic::Status>((stream, first))
    })
    .await;
    let (stream, grant) = match first {
        Err(_) => return Err(not_acquired()),
        Ok(Err(status)) if status.code() == Code::DeadlineExceeded => return Err(not_acquired()),
        Ok(Err(status)) => return Err(client.fail(what(), Some(name), status).await),
        Ok(Ok((
            stream,
            Some(HoldResponse {
                event: Some(Event::Acquired(grant)),
            }),
        ))) => (stream, grant),
        Ok(Ok((_, other))) => {
            let message = format!("the Hold stream's first event was {other:?}, not acquired");
            return Err(Error::Refused {
                addr: client.addr.to_string(),
                what: what(),
                code: Code::Internal,
                message,
            });
        }
    };
    let shared = LeaseShared::new(name, &grant);
    let deadline = lease_deadline(sent_at, from_ms(grant.lease_started_after_ms), from_ms(grant.ttl_ms));
    if !shared.confirm(deadline, "the grant") {
        // Dropping the stream cancels it, which frees the hold at once if the server still keeps it.
        return Err(Error::Lost(shared.ended().expect("a late grant ends the lease")));
    }
    let (release, release_asked) = oneshot::channel();
    tokio::spawn(keep(client.clone(), shared.clone(), stream, sent_at, release_asked));
    Ok(Lease::new(shared, Keeper::Stream { release }))
}

/// Reads the stream's renewals until the guard asks for the release (or is dropped), then gives
/// the hold back when it is still held, and ends the stream. A lease found lost (its deadline
/// passed with no renewal confirmed, or a confirmation came too late) ends its stream at once:
/// nobody counts on the hold any more.
async fn keep(
    client: Client,
    shared: Arc<LeaseShared>,
    stream: Streaming<HoldResponse>,
    sent_at: Instant,
    mut release_asked: oneshot::Receiver<ReleaseReply>,
) {
    let mut stream = Some(stream);
    let reply = loop {
        let deadline = shared.deadline().expect("a lease is confirmed before it is kept");
        tokio::select! {
            asked = &mut release_asked => break asked.ok(),
            () = tokio::time::sleep_until(deadline.into()), if stream.is_some() => {}
            message = next(&mut stream), if stream.is_some() => match message {
                Ok(Some(HoldResponse { event: Some(Event::Renewed(renewed)) })) => {
                    let deadline = lease_deadline(sent_at, from_ms(renewed.lease_started_after_ms), from_ms(renewed.ttl_ms));
                    shared.resigned(&renewed.signed_fences);
                    shared.confirm(deadline, "a renewal");
                }
                Ok(Some(HoldResponse { event: Some(Event::Lost(lost)) })) => {
                    shared.end(shared.lost_with(lost.reason, v1::LostReason::try_from(lost.code).unwrap_or_default()));
                }
                Ok(Some(_)) => {}
                Ok(None) => shared.end(shared.lost_with("the Hold stream ended".to_string(), v1::LostReason::Unspecified)),
                Err(status) => {
                    let why = Error::from_status(&client.addr, "keep the Hold stream", None, status.clone());
                    let reason = match why {
                        Error::Unavailable { cause, .. } => format!("the Hold stream ended: {cause}"),
                        _ => format!("the Hold stream ended: {}: {}", code_in_words(status.code()), status.message()),
                    };
                    shared.end(shared.lost_with(reason, v1::LostReason::Unspecified));
                }
            },
        }
        if shared.ended().is_some() {
            stream = None; // cancels it: frees the hold on a live connection
        }
    };
    let result = if stream.is_some() && shared.ended().is_none() {
        let request = v1::ReleaseRequest {
            name: shared.name.clone(),
            token: shared.token.clone(),
            hold_id: shared.hold_id.clone(),
        };
        let answer = client
            .lock
            .clone()
            .release(client.request(request, std::time::Duration::ZERO))
            .await;
        match answer {
            Ok(_) => Ok(()),
            Err(status) => Err(client
                .fail(format!("release lock \"{}\"", shared.name), None, status)
                .await),
        }
    } else {
        Ok(())
    };
    drop(stream); // cancels it: frees the hold on a live connection if the Release did not get through
    if let Some(reply) = reply {
        let _ = reply.send(result);
    }
}

async fn next(stream: &mut Option<Streaming<HoldResponse>>) -> Result<Option<HoldResponse>, tonic::Status> {
    match stream {
        Some(stream) => stream.message().await,
        None => std::future::pending().await,
    }
}
