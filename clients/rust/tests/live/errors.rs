//! Errors say what went wrong in words, naming the address, the lock or the option.

use holdfast::{Client, ConnectOptions, Error, TlsOptions};

use crate::support::*;

#[tokio::test]
async fn a_dead_address_is_unavailable_in_words() {
    let err = Client::connect("127.0.0.1:1", ConnectOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("holdfast at 127.0.0.1:1 is unavailable: connection refused"),
        "{text}"
    );
    for raw in ["Status {", "transport error", "os error", "tonic"] {
        assert!(!text.contains(raw), "{text}");
    }
}

#[tokio::test]
async fn addresses_of_the_wrong_shape_are_refused_naming_the_option() {
    for (addr, says) in [
        (
            "localhost",
            "\"localhost\" has no port: give host:port, e.g. localhost:50051",
        ),
        (
            "http://127.0.0.1:50051",
            "has a scheme (http://): give host:port only, e.g. 127.0.0.1:50051",
        ),
        (
            "127.0.0.1:99999",
            "the port \"99999\" of \"127.0.0.1:99999\" is not a number from 1 to 65535",
        ),
        (
            "::1:50051",
            "is not host:port (an IPv6 address goes in brackets: [::1]:50051)",
        ),
    ] {
        let err = Client::connect(addr, ConnectOptions::default()).await.unwrap_err();
        assert!(matches!(err, Error::Config { .. }), "{addr}: {err:?}");
        let text = err.to_string();
        assert!(
            text.starts_with("holdfast option address: ") && text.contains(says),
            "{addr}: {text}"
        );
    }
}

#[tokio::test]
async fn a_tls_client_at_a_plaintext_server_is_told_so() {
    let tls = TlsOptions {
        ca_pem: Some(std::fs::read(certs().join("ca.crt")).unwrap()),
        ..Default::default()
    };
    let err = Client::connect(
        addr(),
        ConnectOptions {
            tls: Some(tls),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "holdfast at {} is unavailable: the server does not speak TLS and this client does: connect without TLS, or give the port of its TLS listener",
            addr()
        )
    );
}

#[tokio::test]
async fn a_plaintext_client_at_a_tls_server_is_told_so() {
    let tls_addr = required_env("HOLDFAST_TEST_TLS_ADDR");
    // Connecting succeeds (a TCP connection); the first call finds out.
    let client = Client::connect(&tls_addr, ConnectOptions::default()).await.unwrap();
    let err = client.inspect("x").await.unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "holdfast at {tls_addr} is unavailable: the server speaks TLS and this client does not"
        )),
        "{err}"
    );
}

pub fn certs() -> std::path::PathBuf {
    required_env("HOLDFAST_TEST_CERTS").into()
}
