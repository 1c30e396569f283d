//! The Redis fence store (feature `redis-store`): the script fence-record-1.lua, byte-identical to
//! clients/conformance/fence-record-1.lua, compares and records a lock's newest token in one step
//! on key `holdfast-fence:{<lock>}` (one Cluster slot). It runs EVALSHA, then EVAL on NOSCRIPT.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{ErrorKind, RedisError, ServerErrorKind};

use super::store::{DEFAULT_STORE_TIMEOUT, Decision, FenceStore, StoreError, bounded};

/// The script, as the conformance folder has it (build.rs copies it from there, or from the
/// packed crate's copy).
pub(crate) const FENCE_RECORD_SCRIPT: &str = include_str!(concat!(env!("OUT_DIR"), "/fence-record-1.lua"));

/// Shapes a [`RedisFenceStore`].
#[derive(Clone, Debug)]
pub struct RedisOptions {
    /// How long a lock's record outlives its last accepted request (refreshed by each): the
    /// longest a stale holder may be paused and still be caught. Default 30 days.
    pub keep: Duration,
    /// Accept a Redis that can lose an acknowledged write (`appendonly` not `yes`, `appendfsync`
    /// not `always`, or `CONFIG` disabled so that it cannot be checked): a restart of it may forget
    /// the newest token and let one stale write through.
    pub allow_lossy_redis: bool,
    /// The bound on every call to Redis (connecting included): past it the store answers
    /// unavailable, and the guard 503 / UNAVAILABLE. Default [`DEFAULT_STORE_TIMEOUT`] (1 s).
    pub timeout: Duration,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            keep: Duration::from_secs(30 * 24 * 3600),
            allow_lossy_redis: false,
            timeout: DEFAULT_STORE_TIMEOUT,
        }
    }
}

/// A fence store in the resource's own Redis (not the holdfast server's), as durable as that
/// Redis. It builds its own connection (a redis-rs `ConnectionManager`, which reconnects) with
/// connect and response timeouts of `timeout`, and bounds every check by `timeout` too.
pub struct RedisFenceStore {
    connection: ConnectionManager,
    addr: String,
    keep_ms: u64,
    timeout: Duration,
    sha: String,
}

impl std::fmt::Debug for RedisFenceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisFenceStore")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl RedisFenceStore {
    /// Connects to the Redis at `url` (`redis://HOST:PORT[/DB]`), and refuses one that can lose an
    /// acknowledged write unless `options.allow_lossy_redis`.
    pub async fn open(url: &str, options: RedisOptions) -> Result<Self, StoreError> {
        let client = redis::Client::open(url).map_err(|_| StoreError {
            cause: "the Redis fence store's URL is not a redis:// URL".to_string(),
        })?;
        let addr = format!("Redis at {}", client.get_connection_info().addr());
        let keep_ms = u64::try_from(options.keep.as_millis()).unwrap_or(u64::MAX);
        if keep_ms == 0 {
            return Err(StoreError {
                cause: "RedisOptions::keep must be at least 1 ms".to_string(),
            });
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(options.timeout))
            .set_response_timeout(Some(options.timeout))
            .set_number_of_retries(1);
        let connecting = async {
            ConnectionManager::new_with_config(client, config)
                .await
                .map_err(|err| words(&addr, &err))
        };
        let connection = bounded(options.timeout, &addr, connecting).await?;
        let store = Self {
            connection,
            addr,
            keep_ms,
            timeout: options.timeout,
            sha: redis::Script::new(FENCE_RECORD_SCRIPT).get_hash().to_string(),
        };
        if !options.allow_lossy_redis {
            store.check_durable().await?;
        }
        Ok(store)
    }

    /// The Redis key of a lock's record.
    pub fn key(lock: &str) -> String {
        format!("holdfast-fence:{{{lock}}}")
    }

    async fn config_get(&self, setting: &str) -> Result<String, StoreError> {
        let mut connection = self.connection.clone();
        let answer = async {
            let reply: Result<Vec<String>, RedisError> = redis::cmd("CONFIG")
                .arg("GET")
                .arg(setting)
                .query_async(&mut connection)
                .await;
            match reply {
                Ok(pair) => Ok(pair.get(1).cloned().unwrap_or_default()),
                Err(err) if err.kind() == ErrorKind::Server(ServerErrorKind::ResponseError) => Err(StoreError {
                    cause: format!(
                        "the fence store cannot check the persistence of {}: CONFIG GET {setting} is refused (CONFIG disabled or renamed?); make sure of appendonly yes and appendfsync always yourself and set RedisOptions::allow_lossy_redis",
                        self.addr
                    ),
                }),
                Err(err) => Err(words(&self.addr, &err)),
            }
        };
        bounded(self.timeout, &self.addr, answer).await
    }

    /// Refuses a Redis that can lose an acknowledged write: a record lost in a crash would let a
    /// stale holder through.
    async fn check_durable(&self) -> Result<(), StoreError> {
        for (setting, wanted) in [("appendonly", "yes"), ("appendfsync", "always")] {
            let value = self.config_get(setting).await?;
            if value != wanted {
                return Err(StoreError {
                    cause: format!(
                        "the fence store's {} has {setting} {value}, so a crash can lose acknowledged fence records and let a stale holder through: configure appendonly yes and appendfsync always, or set RedisOptions::allow_lossy_redis to accept that",
                        self.addr
                    ),
                });
            }
        }
        Ok(())
    }

    async fn record(&self, lock: &str, token: u64) -> Result<(i64, String), RedisError> {
        let mut connection = self.connection.clone();
        let args = |command: &str, script: &str| {
            let mut cmd = redis::cmd(command);
            cmd.arg(script)
                .arg(1)
                .arg(Self::key(lock))
                .arg(token.to_string())
                .arg(self.keep_ms);
            cmd
        };
        match args("EVALSHA", &self.sha).query_async(&mut connection).await {
            Err(err) if err.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                args("EVAL", FENCE_RECORD_SCRIPT).query_async(&mut connection).await
            }
            answer => answer,
        }
    }
}

#[async_trait::async_trait]
impl FenceStore for RedisFenceStore {
    async fn check(&self, lock: &str, token: u64) -> Result<Decision, StoreError> {
        let answer = async {
            let (accepted, newest) = self.record(lock, token).await.map_err(|err| words(&self.addr, &err))?;
            let newest = newest.parse().map_err(|_| StoreError {
                cause: format!("{} holds a record for lock {lock:?} that is not a token", self.addr),
            })?;
            Ok(Decision {
                accepted: accepted == 1,
                newest,
            })
        };
        bounded(self.timeout, &self.addr, answer).await
    }
}

/// A Redis error in words, naming the server.
fn words(addr: &str, err: &RedisError) -> StoreError {
    let cause = if err.is_connection_refusal() {
        format!("cannot connect to {addr}: connection refused")
    } else if err.is_timeout() {
        format!("{addr} did not answer in time")
    } else if err.is_connection_dropped() || err.is_io_error() {
        format!("the connection to {addr} was lost")
    } else {
        match err.code() {
            Some(code) => format!("{addr} refused the fence script: {code}"),
            None => format!("{addr} gave an answer the fence store cannot read"),
        }
    };
    StoreError { cause }
}
