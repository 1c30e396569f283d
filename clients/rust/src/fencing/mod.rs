//! The fencing kit's resource side (Cargo feature `guard`; the stores behind `redis-store` and
//! `postgres-store`): a guard in front of the resource that admits a request only when its fence
//! is one holdfast signed for the resource's lock (or, where allowed, an unsigned one) and not
//! older than the newest token its store has seen for that lock. docs/fencing.md tells the story;
//! clients/conformance/signed-fence.md is the format and the order of checks.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use holdfast::fencing::{FenceGuardLayer, KeyRing, MemoryFenceStore};
//! let ring = KeyRing::fetch("http://127.0.0.1:9090/fence-keys").await?;
//! let guard = FenceGuardLayer::new(MemoryFenceStore::default()).key_ring(ring).lock("orders");
//! // tonic: Server::builder().layer(guard).add_service(...); axum: Router::new()....layer(guard)
//! # let _ = guard; Ok(()) }
//! ```

mod guard;
mod keys;
#[cfg(feature = "postgres-store")]
mod postgres;
#[cfg(feature = "redis-store")]
mod redis;
mod refusal;
mod rules;
mod store;
mod wire;

pub use guard::{FenceGuard, FenceGuardLayer, GuardBody};
pub use keys::{KeyRing, KeyRingError, key_id};
#[cfg(feature = "postgres-store")]
pub use postgres::{PostgresFenceStore, PostgresOptions, check_fence};
#[cfg(feature = "redis-store")]
pub use redis::{RedisFenceStore, RedisOptions};
pub use refusal::Refusal;
pub use rules::{AdmittedFence, FenceRules, Wire};
pub use store::{DEFAULT_STORE_TIMEOUT, Decision, FenceStore, MemoryFenceStore, StoreError};
pub use wire::SignedFence;
