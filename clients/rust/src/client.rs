//! The client: one connection, the unary calls, and locks held through their own Hold stream.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tonic::codegen::InterceptedService;
use tonic::transport::Channel;

use crate::connect::{ApiKey, ConnectOptions, DEFAULT_ADDR, TlsOptions, connect_channel, endpoint};
use crate::deadline::lease_deadline;
use crate::diagnose::diagnose;
use crate::error::{Error, LostError};
use crate::hold::hold_stream;
use crate::lease::Lease;
use crate::session::{Session, SessionOptions};
use crate::v1::lock_service_client::LockServiceClient;
use crate::v1::{self, LockMode};

/// The generated LockService client with the API key interceptor, for calls this crate does not wrap.
pub type LockService = LockServiceClient<InterceptedService<Channel, ApiKey>>;

/// What to ask for when taking a lock. The default asks for the server's default lease and no
/// waiting.
#[derive(Clone, Debug, Default)]
pub struct LockOptions {
    /// The lease length; zero means the server's default.
    pub ttl: Duration,
    /// How long to queue for the lock; zero means try once.
    pub wait: Duration,
    /// Names the holder; a non-empty owner re-enters a lock it already holds.
    pub owner: String,
    /// A shared (read) lock instead of an exclusive one.
    pub shared: bool,
    /// A counting semaphore of this size; 0 or 1 is a plain lock.
    pub limit: u32,
    /// Published to watchers with the grant (at most 1024 bytes), e.g. a leader's address.
    pub value: String,
    /// Holds only: the longest the server keeps the hold; zero leaves the server's cap.
    pub max_hold: Duration,
    /// Holds only: the server frees the lock the moment the stream ends, however it ends. That
    /// gives up the guarantee that a holder that is only paused or cut off never believes it holds
    /// a lock someone else has.
    pub release_on_disconnect: bool,
    /// [`Client::acquire`] only: an idempotency key (16 to 512 bytes, unguessable): a retry with
    /// the same key gets the same grant back.
    pub request_id: String,
}

impl LockOptions {
    fn mode(&self) -> i32 {
        if self.shared {
            LockMode::Shared as i32
        } else {
            LockMode::Exclusive as i32
        }
    }

    pub(crate) fn hold_request(&self, name: &str) -> v1::HoldRequest {
        v1::HoldRequest {
            name: name.to_string(),
            owner: self.owner.clone(),
            ttl_ms: ms(self.ttl),
            wait_timeout_ms: ms(self.wait),
            mode: self.mode(),
            limit: self.limit,
            max_hold_ms: ms(self.max_hold),
            release_on_disconnect: self.release_on_disconnect,
            value: self.value.clone(),
        }
    }

    pub(crate) fn acquire_request(&self, name: &str) -> v1::AcquireRequest {
        v1::AcquireRequest {
            name: name.to_string(),
            owner: self.owner.clone(),
            ttl_ms: ms(self.ttl),
            wait_timeout_ms: ms(self.wait),
            mode: self.mode(),
            limit: self.limit,
            request_id: self.request_id.clone(),
            value: self.value.clone(),
        }
    }
}

pub(crate) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

pub(crate) fn from_ms(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// A one-shot grant from [`Client::acquire`]: nothing renews it. Its `deadline` is when the
/// Acquire (or the latest [`Client::renew`]) was sent, plus the lease it reported, less the drift
/// allowance.
#[derive(Clone)]
pub struct Grant {
    /// The lock's name.
    pub name: String,
    /// The secret token that releases and renews the grant. Never log it.
    pub token: String,
    /// The grant's fencing token.
    pub fencing_token: u64,
    /// The grant's signed fence (from a server with a fence signing key; the latest renewal's).
    /// A bearer credential like `token`: never log it.
    pub signed_fence: Option<String>,
    /// How many times the grant is held (reentrancy).
    pub hold_count: u32,
    /// The conservative end of the lease.
    pub deadline: Instant,
}

impl Grant {
    pub(crate) fn new(name: &str, answer: v1::AcquireResponse, deadline: Instant) -> Self {
        Self {
            name: name.to_string(),
            token: answer.token,
            fencing_token: answer.fencing_token,
            signed_fence: Some(answer.signed_fence).filter(|s| !s.is_empty()),
            hold_count: answer.hold_count,
            deadline,
        }
    }

    pub(crate) fn renew_request(&self, ttl: Duration) -> v1::RenewRequest {
        v1::RenewRequest {
            name: self.name.clone(),
            token: self.token.clone(),
            ttl_ms: ms(ttl),
        }
    }

    /// Moves the deadline to what a renewal sent at `sent_at` vouches for.
    pub(crate) fn renewed(&mut self, sent_at: Instant, answer: &v1::RenewResponse) {
        self.deadline = lease_deadline(sent_at, Duration::ZERO, from_ms(answer.ttl_ms));
        if !answer.signed_fence.is_empty() {
            self.signed_fence = Some(answer.signed_fence.clone());
        }
    }

    pub(crate) fn release_request(&self) -> v1::ReleaseRequest {
        v1::ReleaseRequest {
            name: self.name.clone(),
            token: self.token.clone(),
            hold_id: String::new(),
        }
    }
}

// Hand-written so that the token never reaches a log.
impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("name", &self.name)
            .field("fencing_token", &self.fencing_token)
            .field("hold_count", &self.hold_count)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// A connection to one holdfast server. Cheap to clone: clones share the connection.
#[derive(Clone, Debug)]
pub struct Client {
    pub(crate) addr: Arc<str>,
    pub(crate) lock: LockService,
    pub(crate) call_timeout: Duration,
    pub(crate) tls: Arc<Option<TlsOptions>>,
}

impl Client {
    /// Connects to the server at `addr` (`host:port`), waiting at most `options.connect_timeout`.
    /// The error says why it could not, in words: nothing listening, TLS on one side only, a
    /// certificate this client does not trust, an address of the wrong shape.
    pub async fn connect(addr: impl Into<String>, options: ConnectOptions) -> Result<Self, Error> {
        let addr: String = addr.into();
        let endpoint = endpoint(&addr, &options)?;
        let api_key = ApiKey::new(options.api_key.as_deref())?;
        let channel = connect_channel(&addr, endpoint).await?;
        Ok(Self {
            addr: addr.into(),
            lock: LockServiceClient::with_interceptor(channel, api_key),
            call_timeout: options.call_timeout,
            tls: Arc::new(options.tls),
        })
    }

    /// Connects as the environment says: `HOLDFAST_ADDR` (default `127.0.0.1:50051`) and the
    /// TLS and API key variables of [`ConnectOptions::from_env`].
    pub async fn connect_env() -> Result<Self, Error> {
        let addr = std::env::var("HOLDFAST_ADDR").ok().filter(|a| !a.is_empty());
        Self::connect(
            addr.unwrap_or_else(|| DEFAULT_ADDR.to_string()),
            ConnectOptions::from_env()?,
        )
        .await
    }

    /// The server's address, as given.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The generated gRPC client on this connection (the API key included), for anything this
    /// crate does not wrap.
    pub fn lock_service(&self) -> LockService {
        self.lock.clone()
    }

    pub(crate) fn request<T>(&self, message: T, wait: Duration) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        request.set_timeout(self.call_timeout + wait);
        request
    }

    /// The error for a call that failed with `status` (a deadlock names `lock`, the lock a waiting
    /// call waited for). When the connection failed without saying why (the transport says only
    /// "connection closed"), a connection of our own finds out.
    pub(crate) async fn fail(&self, what: String, lock: Option<&str>, status: tonic::Status) -> Error {
        match Error::from_status(&self.addr, what, lock, status) {
            Error::Unavailable { addr, cause } => {
                let cause = diagnose(&addr, self.tls.as_ref().as_ref()).await.unwrap_or(cause);
                Error::Unavailable { addr, cause }
            }
            err => err,
        }
    }

    /// Takes a grant with its own lease that nothing renews (renew it with [`Client::renew`],
    /// give it back with [`Client::release`]). [`Error::NotAcquired`] when it is not granted
    /// within `options.wait`; [`Error::Deadlock`] when the server ended the wait to break a deadlock.
    pub async fn acquire(&self, name: &str, options: &LockOptions) -> Result<Grant, Error> {
        let sent_at = Instant::now();
        let request = self.request(options.acquire_request(name), options.wait);
        let answer = self.lock.clone().acquire(request).await;
        let answer = match answer {
            Ok(answer) => answer.into_inner(),
            Err(status) => return Err(self.fail(format!("acquire lock \"{name}\""), Some(name), status).await),
        };
        if !answer.acquired {
            return Err(Error::NotAcquired {
                name: name.to_string(),
                wait: options.wait,
            });
        }
        let deadline = lease_deadline(sent_at, from_ms(answer.lease_started_after_ms), from_ms(answer.ttl_ms));
        Ok(Grant::new(name, answer, deadline))
    }

    /// Releases one hold of a grant; the answer says whether the lock was freed.
    pub async fn release(&self, grant: &Grant) -> Result<v1::ReleaseResponse, Error> {
        let answer = self
            .lock
            .clone()
            .release(self.request(grant.release_request(), Duration::ZERO))
            .await;
        match answer {
            Ok(answer) => Ok(answer.into_inner()),
            Err(status) => Err(self
                .fail(format!("release lock \"{}\"", grant.name), None, status)
                .await),
        }
    }

    /// Renews a grant's lease for `ttl` from now (zero keeps its lease length) and moves its deadline.
    pub async fn renew(&self, grant: &mut Grant, ttl: Duration) -> Result<(), Error> {
        let sent_at = Instant::now();
        let answer = self
            .lock
            .clone()
            .renew(self.request(grant.renew_request(ttl), Duration::ZERO))
            .await;
        let answer = match answer {
            Ok(answer) => answer.into_inner(),
            Err(status) => return Err(self.fail(format!("renew lock \"{}\"", grant.name), None, status).await),
        };
        grant.renewed(sent_at, &answer);
        Ok(())
    }

    /// A lock's holders, waiters and latest fencing token (never a token).
    pub async fn inspect(&self, name: &str) -> Result<v1::InspectResponse, Error> {
        let request = v1::InspectRequest { name: name.to_string() };
        let answer = self.lock.clone().inspect(self.request(request, Duration::ZERO)).await;
        match answer {
            Ok(answer) => Ok(answer.into_inner()),
            Err(status) => Err(self.fail(format!("inspect lock \"{name}\""), None, status).await),
        }
    }

    /// Whether a fencing token belongs to a live holder right now (check-then-act: prefer a
    /// guard at the resource, see [`Lease::fence_headers`]).
    pub async fn check_fencing_token(
        &self,
        name: &str,
        fencing_token: u64,
    ) -> Result<v1::CheckFencingTokenResponse, Error> {
        let request = v1::CheckFencingTokenRequest {
            name: name.to_string(),
            fencing_token,
        };
        let answer = self
            .lock
            .clone()
            .check_fencing_token(self.request(request, Duration::ZERO))
            .await;
        match answer {
            Ok(answer) => Ok(answer.into_inner()),
            Err(status) => Err(self
                .fail(format!("check a fencing token of lock \"{name}\""), None, status)
                .await),
        }
    }

    /// Takes `name` and keeps it through a Hold stream of its own until the [`Lease`] is released,
    /// dropped, or lost. [`Error::NotAcquired`] when it is not granted within `options.wait`;
    /// [`Error::Lost`] when the grant itself arrived after its lease could have ended;
    /// [`Error::Deadlock`] when the server ended the wait to break a deadlock.
    pub async fn hold(&self, name: &str, options: LockOptions) -> Result<Lease, Error> {
        hold_stream(self, name, &options).await
    }

    /// Runs `work` while holding `name`, then gives the lock back. When the lease may be lost
    /// before `work` is done, `work` is dropped at its next await and this returns
    /// [`Error::Lost`]; so does a loss found at the release (the work may not have been exclusive).
    pub async fn with_lock<T>(
        &self,
        name: &str,
        options: LockOptions,
        work: impl AsyncFnOnce(&Lease) -> T,
    ) -> Result<T, Error> {
        let lease = self.hold(name, options).await?;
        let outcome: Result<T, LostError> = tokio::select! {
            biased;
            lost = lease.lost() => Err(lost),
            value = work(&lease) => Ok(value),
        };
        match outcome {
            Ok(value) => lease.release().await.map(|()| value),
            Err(lost) => Err(Error::Lost(lost)), // dropping the lease stops its stream
        }
    }

    /// Opens a [`Session`]: one stream that holds many locks with one heartbeat.
    pub async fn session(&self, options: SessionOptions) -> Result<Session, Error> {
        Session::open(self, options).await
    }
}
