//! The live servers the tests run against (clients/test-clients.sh starts them and passes their
//! addresses), and real processes of their own for the tests that freeze a server.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use holdfast::{Client, ConnectOptions, Lease, v1};

/// How long a test waits for what it expects before failing.
pub const WAIT_LIMIT: Duration = Duration::from_secs(10);

/// An environment variable the run must set (clients/rust/steps.sh passes each).
pub fn required_env(name: &str) -> String {
    std::env::var(name).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| {
        panic!("{name} is not set: run these tests through clients/test-clients.sh (HOLDFAST_CLIENTS=rust), which starts the servers and sets it")
    })
}

/// The plain server's address.
pub fn addr() -> String {
    required_env("HOLDFAST_ADDR")
}

/// The servers' Redis, host:port.
pub fn redis_addr() -> String {
    let url = required_env("HOLDFAST_REDIS_URL");
    url.trim_start_matches("redis://").trim_end_matches('/').to_string()
}

pub async fn client() -> Client {
    client_at(&addr()).await
}

pub async fn client_at(addr: &str) -> Client {
    Client::connect(addr, ConnectOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A lock name no other test (or run) uses.
pub fn random_name(prefix: &str) -> String {
    format!("rust-{prefix}-{:016x}", RandomState::new().build_hasher().finish())
}

/// The Redis keys of one lock as src/engine/keys.ts builds them (for names without % { }).
pub fn lock_keys(name: &str) -> Vec<String> {
    ["h", "q", "d"].iter().map(|k| format!("hf:{{{name}}}:{k}")).collect()
}

/// Sends one command over RESP and returns the reply line (a bulk string's value).
pub fn redis_command(addr: &str, args: &[&str]) -> std::io::Result<String> {
    let mut conn = TcpStream::connect(addr)?;
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    conn.write_all(request.as_bytes())?;
    let mut reply = BufReader::new(conn);
    let mut line = String::new();
    reply.read_line(&mut line)?;
    if line.starts_with('$') && !line.starts_with("$-1") {
        line.clear();
        reply.read_line(&mut line)?;
    }
    Ok(line.trim().to_string())
}

/// Deletes a lock's state in Redis, as a Redis that lost it would.
pub fn delete_lock_state(name: &str) {
    let keys = lock_keys(name);
    let mut args = vec!["DEL"];
    args.extend(keys.iter().map(String::as_str));
    redis_command(&redis_addr(), &args).expect("DEL in Redis");
}

pub async fn inspect(client: &Client, name: &str) -> v1::InspectResponse {
    client.inspect(name).await.unwrap_or_else(|e| panic!("{e}"))
}

/// Polls `cond` until it holds (the server pushes no event for what these tests wait on).
pub async fn wait_until<F: AsyncFnMut() -> bool>(what: &str, mut cond: F) {
    let start = Instant::now();
    while !cond().await {
        assert!(start.elapsed() < WAIT_LIMIT, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits for the lease to be lost, at most WAIT_LIMIT.
pub async fn wait_lost(lease: &Lease) -> holdfast::LostError {
    tokio::time::timeout(WAIT_LIMIT, lease.lost())
        .await
        .expect("the lease was not reported lost")
}

/// A redis-server and a holdfast server of the test's own, stopped (by PID) when dropped.
pub struct Processes {
    redis: Child,
    server: Child,
    pub addr: String,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Processes {
    pub async fn start() -> Self {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let cli = root.join("dist/src/cli.js");
        assert!(
            cli.exists(),
            "{} is missing: build the server first (npm run build)",
            cli.display()
        );
        let redis_port = free_port().to_string();
        let redis = Command::new("redis-server")
            .args([
                "--port",
                &redis_port,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server");
        let redis_addr = format!("127.0.0.1:{redis_port}");
        let start = Instant::now();
        while redis_command(&redis_addr, &["PING"]).ok().as_deref() != Some("+PONG") {
            assert!(start.elapsed() < WAIT_LIMIT, "redis-server did not answer PING");
            tokio::time::sleep(Duration::from_millis(20)).await; // redis-server announces nothing to wait on
        }
        let redis_url = format!("redis://{redis_addr}");
        // A Redis new to holdfast: the server grants at once instead of waiting out the quarantine.
        let skip = Command::new("node")
            .arg(&cli)
            .args(["skip-first-quarantine", "--redis", &redis_url])
            .output()
            .expect("node");
        assert!(
            skip.status.success(),
            "skip-first-quarantine: {}",
            String::from_utf8_lossy(&skip.stderr)
        );
        let addr = format!("127.0.0.1:{}", free_port());
        let server = Command::new("node")
            .arg(&cli)
            .args(["serve", "--listen", &addr, "--redis", &redis_url, "--log-level", "warn"])
            .current_dir(&root)
            .spawn()
            .expect("node");
        let processes = Self { redis, server, addr };
        let start = Instant::now();
        loop {
            let options = ConnectOptions {
                connect_timeout: Duration::from_secs(1),
                ..Default::default()
            };
            if let Ok(client) = Client::connect(&processes.addr, options).await
                && client.inspect("ready").await.is_ok()
            {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the holdfast server did not start"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        processes
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.server.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill {signal} {}", self.server.id());
    }

    /// Freezes the server (SIGSTOP): it sends nothing any more, not even a lost event.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.server.id().to_string()])
            .status();
        for child in [&mut self.server, &mut self.redis] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
