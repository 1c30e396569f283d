//! Runs a job under a lock; the job stops as soon as the lease may be lost.
//!
//!     HOLDFAST_ADDR=127.0.0.1:50051 cargo run --example hold -- nightly-report
//!
//! HOLDFAST_TLS_CA, HOLDFAST_TLS_CERT and HOLDFAST_TLS_KEY name PEM files for TLS and mutual TLS;
//! HOLDFAST_API_KEY is sent on every call.

use std::time::Duration;

use holdfast::{Client, LockOptions};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(err) = run().await {
        eprintln!("{err}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), holdfast::Error> {
    let name = std::env::args().nth(1).unwrap_or_else(|| "nightly-report".to_string());
    let client = Client::connect_env().await?;
    let options = LockOptions {
        ttl: Duration::from_secs(10),
        wait: Duration::from_secs(5),
        owner: "report-job".to_string(),
        ..Default::default()
    };
    let rows = client
        .with_lock(&name, options, async |lease| {
            println!("holding {} with fencing token {}", lease.name(), lease.fencing_token());
            let mut rows = 0;
            while rows < 5 {
                // Pass the fencing token to the storage so that it can refuse a stale writer.
                println!("row {rows} written with fencing token {}", lease.fencing_token());
                tokio::time::sleep(Duration::from_millis(100)).await;
                rows += 1;
            }
            rows
        })
        .await?;
    println!("done: {rows} rows");
    Ok(())
}
