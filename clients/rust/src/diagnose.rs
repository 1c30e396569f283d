//! Why a connection that was made failed at its first call. The HTTP/2 transport only says
//! "connection closed" or "broken pipe" when the server speaks TLS and this client does not, or
//! refuses this client's certificate; a connection of our own finds out which.

use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

use crate::connect::TlsOptions;
use crate::error::{HTTP_LISTENER_CAUSE, WANTS_TLS_CAUSE, cause_in_words};

/// Bounds each step: a server that answers at all answers quickly.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What a gRPC client sends first: the HTTP/2 connection preface and an empty SETTINGS frame.
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// A cause in words for a cause this client recognises at `addr`, `None` otherwise.
pub(crate) async fn diagnose(addr: &str, tls: Option<&TlsOptions>) -> Option<String> {
    tokio::time::timeout(3 * PROBE_TIMEOUT, probe(addr, tls))
        .await
        .ok()
        .flatten()
}

async fn probe(addr: &str, tls: Option<&TlsOptions>) -> Option<String> {
    let tcp = match tokio::time::timeout(PROBE_TIMEOUT, TcpStream::connect(addr))
        .await
        .ok()?
    {
        Ok(tcp) => tcp,
        Err(e) => return Some(cause_in_words(&e)),
    };
    match tls {
        None => plaintext(tcp, addr).await,
        Some(tls) => with_tls(tcp, addr, tls).await,
    }
}

async fn plaintext(mut tcp: TcpStream, addr: &str) -> Option<String> {
    let answer = first_bytes(&mut tcp).await.ok()?;
    if answer.starts_with(b"HTTP/1") {
        return Some(HTTP_LISTENER_CAUSE.to_string());
    }
    if matches!(answer.first(), Some(0x15 | 0x16)) || (answer.is_empty() && speaks_tls(addr).await) {
        return Some(WANTS_TLS_CAUSE.to_string());
    }
    None
}

/// Whether a TLS handshake with `addr` gets as far as the server's certificate: with no CA
/// trusted, a TLS server fails it on its certificate.
async fn speaks_tls(addr: &str) -> bool {
    let Ok(Ok(tcp)) = tokio::time::timeout(PROBE_TIMEOUT, TcpStream::connect(addr)).await else {
        return false;
    };
    let config = ClientConfig::builder()
        .with_root_certificates(RootCertStore::empty())
        .with_no_client_auth();
    let Ok(name) = ServerName::try_from(host_of(addr).to_string()) else {
        return false;
    };
    let handshake = TlsConnector::from(Arc::new(config)).connect(name, tcp);
    match tokio::time::timeout(PROBE_TIMEOUT, handshake).await {
        Ok(Err(e)) => cause_in_words(&e).starts_with("its certificate"),
        _ => false,
    }
}

async fn with_tls(tcp: TcpStream, addr: &str, tls: &TlsOptions) -> Option<String> {
    let config = client_config(tls)?;
    let host = tls.server_name.clone().unwrap_or_else(|| host_of(addr).to_string());
    let name = ServerName::try_from(host).ok()?;
    let mut stream = match tokio::time::timeout(PROBE_TIMEOUT, TlsConnector::from(Arc::new(config)).connect(name, tcp))
        .await
        .ok()?
    {
        Ok(stream) => stream,
        Err(e) => return Some(cause_in_words(&e)),
    };
    // With TLS 1.3 a refused client certificate shows up on the first read, not in the handshake.
    stream.write_all(HTTP2_PREFACE).await.ok()?;
    let mut buf = [0u8; 16];
    match tokio::time::timeout(PROBE_TIMEOUT, stream.read(&mut buf)).await.ok()? {
        Err(e) if e.kind() != std::io::ErrorKind::UnexpectedEof => Some(cause_in_words(&e)),
        Err(_) | Ok(0) => Some(
            "the server closed the connection after the TLS handshake: it may have refused this client's certificate (mutual TLS wants HOLDFAST_TLS_CERT and HOLDFAST_TLS_KEY signed by its client CA)"
                .to_string(),
        ),
        Ok(_) => None,
    }
}

/// This client's TLS settings as a rustls config, `None` when there is no CA to check against.
fn client_config(tls: &TlsOptions) -> Option<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(tls.ca_pem.as_deref()?) {
        roots.add(cert.ok()?).ok()?;
    }
    let builder = ClientConfig::builder().with_root_certificates(roots);
    match (&tls.cert_pem, &tls.key_pem) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_slice_iter(cert)
                .collect::<Result<Vec<_>, _>>()
                .ok()?;
            let key = PrivateKeyDer::from_pem_slice(key).ok()?;
            builder.with_client_auth_cert(chain, key).ok()
        }
        _ => Some(builder.with_no_client_auth()),
    }
}

fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
    host.trim_start_matches('[').trim_end_matches(']')
}

async fn first_bytes(tcp: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    tcp.write_all(HTTP2_PREFACE).await?;
    let mut buf = [0u8; 16];
    let n = match tokio::time::timeout(PROBE_TIMEOUT, tcp.read(&mut buf)).await {
        Ok(read) => read.unwrap_or(0),
        Err(_) => 0,
    };
    Ok(buf[..n].to_vec())
}
