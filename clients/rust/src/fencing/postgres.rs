//! The PostgreSQL fence store (feature `postgres-store`), through tokio-postgres: one statement,
//! the other languages' own, compares and records a lock's newest token in the table
//! `holdfast_fences`; inside a transaction the row stays locked until it ends.

use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::types::Type;
use tokio_postgres::{Client, Config, GenericClient, NoTls};

use super::store::{DEFAULT_STORE_TIMEOUT, Decision, FenceStore, StoreError, bounded};

/// The fence table, created at open when missing. numeric(20,0) holds any uint64.
const CREATE_FENCE_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS holdfast_fences (lock text PRIMARY KEY, token numeric(20,0) NOT NULL)";

/// Compares and records in one statement: the row is written (and locked until the transaction
/// ends) only when the stored token is not newer; no row back means stale.
const RECORD_FENCE: &str = "INSERT INTO holdfast_fences (lock, token) VALUES ($1, $2::numeric)
ON CONFLICT (lock) DO UPDATE SET token = EXCLUDED.token WHERE holdfast_fences.token <= EXCLUDED.token
RETURNING token::text";

const READ_FENCE: &str = "SELECT token::text FROM holdfast_fences WHERE lock = $1";

/// Shapes a [`PostgresFenceStore`].
#[derive(Clone, Debug)]
pub struct PostgresOptions {
    /// The bound on connecting and on every check: the store sets it as the connection's
    /// `connect_timeout` and `statement_timeout`, and enforces it around each call. Past it the
    /// store answers unavailable, and the guard 503 / UNAVAILABLE. Default
    /// [`DEFAULT_STORE_TIMEOUT`] (1 s).
    pub timeout: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_STORE_TIMEOUT,
        }
    }
}

/// A fence store in the resource's PostgreSQL database: committed records survive a crash. It
/// keeps one connection of its own (without TLS), opened again when it is lost.
pub struct PostgresFenceStore {
    config: Config,
    addr: String,
    timeout: Duration,
    client: tokio::sync::Mutex<Option<Arc<Client>>>,
}

impl std::fmt::Debug for PostgresFenceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresFenceStore")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl PostgresFenceStore {
    /// Connects to the database `url` names (`postgres://USER@HOST:PORT/DB`, or a key=value
    /// string) and creates `holdfast_fences` if it is missing.
    pub async fn open(url: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        let mut config: Config = url.parse().map_err(|_| StoreError {
            cause: "the PostgreSQL fence store's connection string cannot be read".to_string(),
        })?;
        let ms = options.timeout.as_millis().max(1);
        let extra = format!("-c statement_timeout={ms}");
        let given = config.get_options().unwrap_or("").to_string();
        config
            .connect_timeout(options.timeout)
            .options(format!("{given} {extra}").trim());
        let host = config.get_hosts().first().map(|host| match host {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        });
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let addr = format!(
            "PostgreSQL at {}:{port}",
            host.unwrap_or_else(|| "localhost".to_string())
        );
        let store = Self {
            config,
            addr,
            timeout: options.timeout,
            client: tokio::sync::Mutex::new(None),
        };
        let client = store.client().await?;
        let create = async {
            client
                .batch_execute(CREATE_FENCE_TABLE)
                .await
                .map_err(|err| store.words(&err))
        };
        bounded(store.timeout, &store.addr, create).await?;
        Ok(store)
    }

    /// The open connection, or a new one when it is lost.
    async fn client(&self) -> Result<Arc<Client>, StoreError> {
        let mut client = self.client.lock().await;
        if let Some(open) = client.as_ref().filter(|open| !open.is_closed()) {
            return Ok(open.clone());
        }
        let connect = async {
            let (fresh, connection) = self.config.connect(NoTls).await.map_err(|err| self.words(&err))?;
            tokio::spawn(connection); // ends when the connection does; the next check opens another
            Ok(Arc::new(fresh))
        };
        let fresh = bounded(self.timeout, &self.addr, connect).await?;
        *client = Some(fresh.clone());
        Ok(fresh)
    }

    fn words(&self, err: &tokio_postgres::Error) -> StoreError {
        let addr = &self.addr;
        let io = std::error::Error::source(err).and_then(|cause| cause.downcast_ref::<std::io::Error>());
        let cause = if let Some(db) = err.as_db_error() {
            if db.code() == &tokio_postgres::error::SqlState::QUERY_CANCELED {
                format!("{addr} cancelled the fence statement (statement_timeout)")
            } else {
                format!("{addr} refused the fence statement (SQLSTATE {})", db.code().code())
            }
        } else if io.is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused) {
            format!("cannot connect to {addr}: connection refused")
        } else if err.is_closed() || io.is_some() {
            format!("the connection to {addr} was lost")
        } else {
            format!("cannot use {addr}: the connection failed")
        };
        StoreError { cause }
    }
}

#[async_trait::async_trait]
impl FenceStore for PostgresFenceStore {
    async fn check(&self, lock: &str, token: u64) -> Result<Decision, StoreError> {
        let check = async {
            let client = self.client().await?;
            check_fence(client.as_ref(), lock, token).await.map_err(|err| {
                if err.is_closed() {
                    // The next check opens a new connection.
                    if let Ok(mut open) = self.client.try_lock() {
                        open.take();
                    }
                }
                self.words(&err)
            })
        };
        bounded(self.timeout, &self.addr, check).await
    }
}

/// Compares and records `token` for `lock` through `client`: a connection (its own commit) or a
/// transaction you run, where the record, and the row lock that makes later writers of the lock
/// wait, last until the transaction ends, so that the fence and your write commit or roll back
/// together. Nothing bounds it but your connection's settings.
pub async fn check_fence(
    client: &impl GenericClient,
    lock: &str,
    token: u64,
) -> Result<Decision, tokio_postgres::Error> {
    let text = token.to_string();
    let recorded = client
        .query_typed_opt(RECORD_FENCE, &[(&lock, Type::TEXT), (&text, Type::TEXT)])
        .await?;
    if recorded.is_some() {
        return Ok(Decision {
            accepted: true,
            newest: token,
        });
    }
    let row = client.query_typed_opt(READ_FENCE, &[(&lock, Type::TEXT)]).await?;
    let newest = row
        .and_then(|row| row.get::<_, String>(0).parse().ok())
        .unwrap_or(token);
    Ok(Decision::of(Some(newest), token))
}
