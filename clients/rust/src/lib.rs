//! The Rust client of the holdfast lock server.
//!
//! [`Client::hold`] takes a lock and keeps it through a Hold stream of its own; the [`Lease`] it
//! returns is a guard: it exposes the fencing token, resolves [`Lease::lost`] the moment the lease
//! may be lost, and gives the lock back when released or dropped. [`Client::with_lock`] runs work
//! under a lock and stops it when the lease is lost. A [`Session`] holds many locks under one
//! stream with one heartbeat. Every lease keeps a conservative local deadline ([`deadline`]): the
//! client believes it only until its request's send time plus the lease the server reported, less
//! a clock-drift allowance.
//!
//! A lease's fence ([`fence`]) goes on every request to what the lock protects; the resource's side
//! of the fencing kit, a guard that checks signed fences before its store, is `fencing`, behind
//! the Cargo features `guard`, `redis-store` and `postgres-store`.
//!
//! ```no_run
//! # async fn run() -> Result<(), holdfast::Error> {
//! let client = holdfast::Client::connect_env().await?;
//! let options = holdfast::LockOptions { ttl: std::time::Duration::from_secs(10), ..Default::default() };
//! let lease = client.hold("nightly-report", options).await?;
//! println!("fencing token {}", lease.fencing_token());
//! lease.release().await?;
//! # Ok(()) }
//! ```

mod client;
mod connect;
pub mod deadline;
mod diagnose;
mod error;
pub mod fence;
#[cfg(feature = "guard")]
pub mod fencing;
mod hold;
mod lease;
pub mod session;

/// The stubs generated from `proto/holdfast/v1` (`holdfast.v1`).
#[allow(clippy::all, missing_docs)]
pub mod v1 {
    tonic::include_proto!("holdfast.v1");
}

pub use client::{Client, Grant, LockOptions, LockService};
pub use connect::{ApiKey, ConnectOptions, DEFAULT_ADDR, TlsOptions};
pub use error::{Error, LostError, is_deadlock};
pub use fence::Fence;
pub use lease::Lease;
pub use session::{Session, SessionOptions, SessionStats};
