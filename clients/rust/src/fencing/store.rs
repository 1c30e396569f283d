//! The stores that remember each lock's newest token: one async trait, and the memory store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the Redis and PostgreSQL stores wait for their backend before answering
/// "unavailable" (503 / UNAVAILABLE), unless their options' `timeout` says otherwise.
pub const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_secs(1);

/// A store's answer: `accepted` when the token is not older than the newest recorded for the lock
/// (it is then the newest), and `newest`, the newest token after the check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Whether the token was accepted (and recorded).
    pub accepted: bool,
    /// The newest token for the lock after the check.
    pub newest: u64,
}

impl Decision {
    /// fencing.json's rule, given the newest token recorded so far: equal is accepted (one
    /// holder writing again).
    pub fn of(newest: Option<u64>, token: u64) -> Self {
        match newest {
            Some(newest) if token < newest => Self {
                accepted: false,
                newest,
            },
            _ => Self {
                accepted: true,
                newest: token,
            },
        }
    }
}

/// Why a store could not answer, in words (it names the backend's address, never a password).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError {
    /// The cause, in words.
    pub cause: String,
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.cause)
    }
}

impl std::error::Error for StoreError {}

/// Compares a request's token with the newest one recorded for its lock and records it when it
/// is not older, in one atomic step, so two requests (or two guard processes sharing the store)
/// cannot both pass with tokens out of order. An error makes the guard answer 503 / UNAVAILABLE.
#[async_trait::async_trait]
pub trait FenceStore: Send + Sync + 'static {
    /// Checks and records `token` for `lock`.
    async fn check(&self, lock: &str, token: u64) -> Result<Decision, StoreError>;
}

#[async_trait::async_trait]
impl<T: FenceStore + ?Sized> FenceStore for Arc<T> {
    async fn check(&self, lock: &str, token: u64) -> Result<Decision, StoreError> {
        (**self).check(lock, token).await
    }
}

/// Keeps the newest tokens in this process: it forgets them when the process ends, so it
/// protects only a resource whose own state lives (and is lost) with it. One entry per lock ever
/// seen.
#[derive(Debug, Default)]
pub struct MemoryFenceStore {
    newest: Mutex<HashMap<String, u64>>,
}

#[async_trait::async_trait]
impl FenceStore for MemoryFenceStore {
    async fn check(&self, lock: &str, token: u64) -> Result<Decision, StoreError> {
        let mut newest = self.newest.lock().expect("memory fence store");
        let decision = Decision::of(newest.get(lock).copied(), token);
        newest.insert(lock.to_string(), decision.newest);
        Ok(decision)
    }
}

/// Runs a backend call within `timeout`; past it, the answer is `backend did not answer within ...`.
#[cfg(any(feature = "redis-store", feature = "postgres-store"))]
pub(crate) async fn bounded<T>(
    timeout: Duration,
    backend: &str,
    call: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(timeout, call).await.unwrap_or_else(|_| {
        Err(StoreError {
            cause: format!("{backend} did not answer within {}", crate::error::millis(timeout)),
        })
    })
}
