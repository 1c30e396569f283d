//! What the fencing tests share: the conformance files, fences signed with their RFC 8032 test
//! seeds, a store wrapper that counts calls, a resource served over real HTTP behind the guard,
//! and real redis-server and PostgreSQL processes of their own.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use ed25519_dalek::{Signer as _, SigningKey};
use holdfast::fencing::{
    AdmittedFence, Decision, FenceGuardLayer, FenceStore, MemoryFenceStore, PostgresFenceStore, PostgresOptions,
    RedisFenceStore, RedisOptions, StoreError,
};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tower_layer::Layer as _;

/// A generous ceiling for what a test awaits; never a timing assertion.
pub const WAIT_LIMIT: Duration = Duration::from_secs(20);

pub fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

pub fn conformance(name: &str) -> Value {
    let path = repo_file(&format!("clients/conformance/{name}"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn vectors() -> Value {
    conformance("signed-fence.json")
}

/// The vectors' ring (two keys) as a JWK set string.
pub fn ring_jwks() -> String {
    vectors()["keys"]["ring"].to_string()
}

/// A JWK set of the given keys of the vectors (`ring` members by index, or the outsider).
pub fn jwks_of(keys: &[Value]) -> String {
    serde_json::json!({ "keys": keys }).to_string()
}

/// A signing key from the vectors' seeds, by key id.
pub fn seed(key_id: &str) -> SigningKey {
    let hex = vectors()["keys"]["seeds"][key_id].as_str().expect("a seed").to_string();
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    SigningKey::from_bytes(&bytes.try_into().unwrap())
}

pub const KEY_1: &str = "If4x36FUomFia_hU";
pub const KEY_2: &str = "OfcT0KZEJT8EUpQh";
pub const OUTSIDER: &str = "2sBz4BI73qWd2bO9";

/// `encodeURIComponent`'s encoding, through the holder side of the crate.
pub fn encode(name: &str) -> String {
    holdfast::Fence::new(name, 1).lock
}

/// A fence signed by the seed of `key_id`, as a server signs one.
pub fn sign(key_id: &str, namespace: &str, lock: &str, token: u64, lease_end_ms: Option<u64>) -> String {
    let end = lease_end_ms.map(|ms| ms.to_string()).unwrap_or_default();
    let text = format!("v1:{key_id}:{}:{}:{token}:{end}", encode(namespace), encode(lock));
    let signature = seed(key_id).sign(text.as_bytes());
    format!("{text}:{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
}

pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// A store that counts the calls it passes on to the real one.
pub struct Counting<S> {
    pub inner: S,
    pub calls: Arc<AtomicUsize>,
}

impl<S> Counting<S> {
    pub fn new(inner: S) -> (Self, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        (
            Self {
                inner,
                calls: calls.clone(),
            },
            calls,
        )
    }
}

#[async_trait::async_trait]
impl<S: FenceStore> FenceStore for Counting<S> {
    async fn check(&self, lock: &str, token: u64) -> Result<Decision, StoreError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.check(lock, token).await
    }
}

/// What the protected resource holds: the accepted writes, in order, with their fences.
#[derive(Clone, Default)]
pub struct Storage {
    pub writes: Arc<Mutex<Vec<(AdmittedFence, String)>>>,
}

impl Storage {
    pub fn bodies(&self) -> Vec<String> {
        self.writes
            .lock()
            .unwrap()
            .iter()
            .map(|(_, body)| body.clone())
            .collect()
    }
}

/// The resource: an HTTP server (hyper) whose handler stores each request's body, behind `guard`.
pub struct Resource {
    pub addr: SocketAddr,
    pub storage: Storage,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Resource {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Resource {
    pub async fn start(guard: FenceGuardLayer) -> Self {
        let storage = Storage::default();
        let kept = storage.clone();
        let handler = tower::service_fn(move |request: Request<hyper::body::Incoming>| {
            let storage = kept.clone();
            async move {
                let fence = request.extensions().get::<AdmittedFence>().cloned();
                let body = request
                    .into_body()
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let text = String::from_utf8_lossy(&body).to_string();
                let answer = match fence {
                    Some(fence) => {
                        let reply = format!("{}:{}:{}", fence.lock, fence.token, fence.signed);
                        storage.writes.lock().unwrap().push((fence, text));
                        reply
                    }
                    None => "unguarded".to_string(),
                };
                Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(answer))))
            }
        });
        let service = guard.layer(handler);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let service = hyper_util::service::TowerToHyperService::new(service.clone());
                tokio::spawn(async move {
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { addr, storage, server }
    }

    /// PUT `body` with these headers: the status and the answer (JSON for a refusal).
    pub async fn put(&self, headers: HeaderMap, body: &str) -> (StatusCode, String) {
        put(self.addr, "/doc", headers, body).await
    }
}

pub async fn put(addr: SocketAddr, path: &str, headers: HeaderMap, body: &str) -> (StatusCode, String) {
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut request = Request::put(format!("http://{addr}{path}"))
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    *request.headers_mut() = headers;
    let response = tokio::time::timeout(WAIT_LIMIT, client.request(request))
        .await
        .expect("the resource answers")
        .expect("the resource answers");
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).to_string())
}

/// Headers carrying a signed fence and the matching unsigned pair.
pub fn signed_headers(fence: &str, lock: &str, token: u64) -> HeaderMap {
    let mut headers = unsigned_headers(lock, token);
    headers.insert("holdfast-fence", fence.parse().unwrap());
    headers
}

pub fn unsigned_headers(lock: &str, token: u64) -> HeaderMap {
    let mut headers = HeaderMap::new();
    holdfast::Fence::new(lock, token).set_headers(&mut headers);
    headers
}

/// A refusal's JSON body.
pub fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// A free loopback port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A redis-server of the test's own on a free port, with the durability the store wants unless
/// `args` say otherwise; SIGKILLed when dropped.
pub struct RedisServer {
    pub child: Child,
    pub url: String,
    _dir: TempDir,
}

impl RedisServer {
    pub fn start(args: &[&str]) -> Self {
        let dir = TempDir::new("redis");
        let port = free_port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "yes", "--appendfsync", "always", "--dir"])
            .arg(&dir.0)
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server runs (Debian's redis-server)");
        let started = Instant::now();
        // redis-server announces nothing to wait on: try until it answers PING.
        while redis_ping(port).is_err() {
            assert!(
                started.elapsed() < WAIT_LIMIT,
                "redis-server on port {port} did not answer PING"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child,
            url: format!("redis://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub async fn store(&self) -> RedisFenceStore {
        RedisFenceStore::open(&self.url, RedisOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        signal(self.child.id(), "CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn redis_ping(port: u16) -> std::io::Result<()> {
    use std::io::{Read as _, Write as _};
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port))?;
    conn.write_all(b"PING\r\n")?;
    let mut answer = [0u8; 7];
    conn.read_exact(&mut answer)?;
    Ok(())
}

/// A private PostgreSQL from test/support/postgres.sh; stopped (and its folder removed) when dropped.
pub struct Postgres {
    pub url: String,
    pub pid: u32,
    dir: TempDir,
}

impl Postgres {
    pub fn start() -> Self {
        let dir = TempDir::new("postgres");
        let data = dir.0.join("pg");
        let out = Command::new("bash")
            .arg(repo_file("test/support/postgres.sh"))
            .arg("start")
            .arg(&data)
            .output()
            .expect("bash runs");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "postgres.sh start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let field = |name: &str| {
            text.split_whitespace()
                .find_map(|f| f.strip_prefix(name))
                .unwrap_or_else(|| panic!("postgres.sh printed no {name}: {text}"))
                .to_string()
        };
        Self {
            url: field("PGURL="),
            pid: field("PGPID=").parse().unwrap(),
            dir,
        }
    }

    pub async fn store(&self) -> PostgresFenceStore {
        PostgresFenceStore::open(&self.url, PostgresOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Signals the postmaster and every process it started.
    pub fn signal_all(&self, sig: &str) {
        for child in children(self.pid) {
            signal(child, sig);
        }
        signal(self.pid, sig);
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.signal_all("CONT");
        let _ = Command::new("bash")
            .arg(repo_file("test/support/postgres.sh"))
            .arg("stop")
            .arg(self.dir.0.join("pg"))
            .status();
    }
}

/// The processes whose parent is `pid` (from /proc).
fn children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid)
            && let Ok(child) = entry.file_name().to_string_lossy().parse()
        {
            found.push(child);
        }
    }
    found
}

/// `kill -SIG pid`, by PID only.
pub fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

/// A folder of the test's own, removed when dropped (PostgreSQL's user must reach it).
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(what: &str) -> Self {
        let out = Command::new("mktemp")
            .args(["-d", &format!("/tmp/holdfast-rust-{what}-XXXXXX")])
            .output()
            .unwrap();
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        assert!(path.is_dir(), "mktemp made no folder");
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The three stores, each on a real backend of its own, for tests that run on each.
pub enum Backend {
    Memory,
    Redis(RedisServer),
    Postgres(Postgres),
}

impl Backend {
    pub fn all() -> Vec<Backend> {
        vec![
            Backend::Memory,
            Backend::Redis(RedisServer::start(&[])),
            Backend::Postgres(Postgres::start()),
        ]
    }

    pub fn name(&self) -> &'static str {
        match self {
            Backend::Memory => "memory",
            Backend::Redis(_) => "redis",
            Backend::Postgres(_) => "postgres",
        }
    }

    pub async fn store(&self) -> Arc<dyn FenceStore> {
        match self {
            Backend::Memory => Arc::new(MemoryFenceStore::default()),
            Backend::Redis(redis) => Arc::new(redis.store().await),
            Backend::Postgres(pg) => Arc::new(pg.store().await),
        }
    }
}

/// A holdfast server of the test's own (the repository's dist/src/cli.js, which
/// clients/test-clients.sh builds) on a redis-server of its own, signing fences with a key made by
/// `holdfast fence-key new`, its key ring at `keys_url`; stopped when dropped.
pub struct SigningServer {
    pub addr: String,
    pub keys_url: String,
    child: Child,
    _redis: RedisServer,
    _dir: TempDir,
}

impl SigningServer {
    pub async fn start() -> Self {
        let cli = repo_file("dist/src/cli.js");
        assert!(
            cli.is_file(),
            "{} is missing: build the server (npm run build)",
            cli.display()
        );
        let redis = RedisServer::start(&[]);
        let dir = TempDir::new("signing");
        let key = dir.0.join("fence-key.pem");
        let node = |args: &[&std::ffi::OsStr]| {
            let status = Command::new("node")
                .arg(&cli)
                .args(args)
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "node cli.js {args:?} failed");
        };
        // A Redis new to holdfast: the server grants at once instead of waiting out the quarantine.
        node(&["skip-first-quarantine".as_ref(), "--redis".as_ref(), redis.url.as_ref()]);
        node(&["fence-key".as_ref(), "new".as_ref(), "--out".as_ref(), key.as_os_str()]);
        let addr = format!("127.0.0.1:{}", free_port());
        let http = format!("127.0.0.1:{}", free_port());
        let child = Command::new("node")
            .arg(&cli)
            .args([
                "serve",
                "--listen",
                &addr,
                "--redis",
                &redis.url,
                "--log-level",
                "warn",
                "--http-listen",
                &http,
            ])
            .arg("--fence-signing-key")
            .arg(&key)
            .spawn()
            .expect("node runs");
        let server = Self {
            addr,
            keys_url: format!("http://{http}/fence-keys"),
            child,
            _redis: redis,
            _dir: dir,
        };
        // The server says nothing we could wait on: connect until it answers.
        let started = Instant::now();
        while holdfast::Client::connect(server.addr.as_str(), holdfast::ConnectOptions::default())
            .await
            .is_err()
            || holdfast::fencing::KeyRing::fetch(&server.keys_url).await.is_err()
        {
            assert!(
                started.elapsed() < WAIT_LIMIT,
                "the signing server on {} did not start",
                server.addr
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        server
    }
}

impl Drop for SigningServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
