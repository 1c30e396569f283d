//! Mutual TLS with an API key: clients/test-clients.sh's second server, whose client CA and key
//! clients/rust/steps.sh passes (HOLDFAST_TEST_TLS_ADDR, HOLDFAST_TEST_CERTS, HOLDFAST_TEST_API_KEY).

use std::time::Duration;

use holdfast::{Client, ConnectOptions, Error, LockOptions, SessionOptions, TlsOptions};
use tonic::Code;

use crate::errors::certs;
use crate::support::*;

fn tls(ca: &str, client: &str) -> TlsOptions {
    let read = |file: String| Some(std::fs::read(certs().join(file)).unwrap());
    TlsOptions {
        ca_pem: read(format!("{ca}.crt")),
        cert_pem: read(format!("{client}.crt")),
        key_pem: read(format!("{client}.key")),
        server_name: None,
    }
}

fn with_key(tls: TlsOptions, api_key: Option<String>) -> ConnectOptions {
    ConnectOptions {
        tls: Some(tls),
        api_key,
        ..Default::default()
    }
}

fn options() -> LockOptions {
    LockOptions {
        ttl: Duration::from_secs(3),
        wait: Duration::from_secs(1),
        ..Default::default()
    }
}

#[tokio::test]
async fn mutual_tls_with_an_api_key_holds_locks() {
    let tls_addr = required_env("HOLDFAST_TEST_TLS_ADDR");
    let key = required_env("HOLDFAST_TEST_API_KEY");
    let client = Client::connect(&tls_addr, with_key(tls("ca", "client"), Some(key)))
        .await
        .unwrap();
    let lease = client.hold(&random_name("tls"), options()).await.unwrap();
    assert!(lease.fencing_token() > 0);
    lease.release().await.unwrap();
    // The key goes on streams too: a session's.
    let session = client.session(SessionOptions::default()).await.unwrap();
    let lease = session.hold(&random_name("tls-session"), options()).await.unwrap();
    assert!(lease.fencing_token() > 0);
    lease.release().await.unwrap();
    session.close().await.unwrap();
}

/// Negative control: the same client without the key is refused, in words.
#[tokio::test]
async fn without_the_api_key_the_server_refuses() {
    let tls_addr = required_env("HOLDFAST_TEST_TLS_ADDR");
    let client = Client::connect(&tls_addr, with_key(tls("ca", "client"), None))
        .await
        .unwrap();
    let name = random_name("tls-nokey");
    let err = client.hold(&name, options()).await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err}");
    assert!(
        err.to_string().starts_with(&format!(
            "holdfast at {tls_addr} refused to hold lock \"{name}\": unauthenticated: "
        )),
        "{err}"
    );
    let err = client.session(SessionOptions::default()).await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err}");
    assert!(
        err.to_string().starts_with(&format!(
            "holdfast at {tls_addr} refused to open a session: unauthenticated: "
        )),
        "{err}"
    );
}

#[tokio::test]
async fn a_server_certificate_from_another_ca_is_not_trusted() {
    let tls_addr = required_env("HOLDFAST_TEST_TLS_ADDR");
    let err = Client::connect(&tls_addr, with_key(tls("other-ca", "client"), None))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("its certificate is not signed by a CA this client trusts"),
        "{err}"
    );
}

#[tokio::test]
async fn a_client_certificate_the_server_does_not_trust_is_told() {
    let tls_addr = required_env("HOLDFAST_TEST_TLS_ADDR");
    let key = required_env("HOLDFAST_TEST_API_KEY");
    let err = match Client::connect(&tls_addr, with_key(tls("ca", "other-client"), Some(key))).await {
        Err(err) => err,
        Ok(client) => client.inspect("x").await.unwrap_err(),
    };
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    assert!(err.to_string().contains("refused this client's certificate"), "{err}");
}
