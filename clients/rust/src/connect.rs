//! How to reach a holdfast server: its address, TLS (with a client certificate) and an API key.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use crate::error::{Error, cause_in_words};

/// The address [`ConnectOptions::from_env`] users get when `HOLDFAST_ADDR` is not set.
pub const DEFAULT_ADDR: &str = "127.0.0.1:50051";

/// How to connect. The default is plaintext, no API key, 10 s to connect and 10 s per call.
#[derive(Clone)]
pub struct ConnectOptions {
    /// TLS settings; `None` is plaintext.
    pub tls: Option<TlsOptions>,
    /// Sent on every call, streams included, as the metadata `authorization: Bearer <key>`.
    pub api_key: Option<String>,
    /// How long to wait for the connection.
    pub connect_timeout: Duration,
    /// How long to wait for each call's answer (plus the wait of an acquire or hold).
    pub call_timeout: Duration,
}

/// TLS, with a client certificate for mutual TLS. All PEM contents; `TlsOptions::default()`
/// trusts the system's CAs.
#[derive(Clone, Default)]
pub struct TlsOptions {
    /// The CA that signed the server's certificate (else the system's CAs).
    pub ca_pem: Option<Vec<u8>>,
    /// This client's certificate, for mutual TLS (with `key_pem`).
    pub cert_pem: Option<Vec<u8>>,
    /// This client's private key, for mutual TLS (with `cert_pem`).
    pub key_pem: Option<Vec<u8>>,
    /// The name the server's certificate must carry, when it is not the address's host.
    pub server_name: Option<String>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            tls: None,
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            call_timeout: Duration::from_secs(10),
        }
    }
}

// Hand-written so that an API key or a private key never reaches a log.
impl fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("tls", &self.tls)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("call_timeout", &self.call_timeout)
            .finish()
    }
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |v: &Option<Vec<u8>>| v.as_ref().map(|_| "<set>");
        f.debug_struct("TlsOptions")
            .field("ca_pem", &set(&self.ca_pem))
            .field("cert_pem", &set(&self.cert_pem))
            .field("key_pem", &set(&self.key_pem))
            .field("server_name", &self.server_name)
            .finish()
    }
}

impl ConnectOptions {
    /// The options the environment asks for, as the holdfast command line reads them:
    /// `HOLDFAST_TLS_CA`, `HOLDFAST_TLS_CERT` and `HOLDFAST_TLS_KEY` name PEM files (any of them,
    /// `HOLDFAST_TLS=1` or `HOLDFAST_TLS_SERVER_NAME` turns TLS on), `HOLDFAST_API_KEY` is the key.
    /// An error names the variable and the file.
    pub fn from_env() -> Result<Self, Error> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let pem = |name: &str| -> Result<Option<Vec<u8>>, Error> {
            match var(name) {
                None => Ok(None),
                Some(path) => read_pem(name, Path::new(&path)).map(Some),
            }
        };
        let tls = TlsOptions {
            ca_pem: pem("HOLDFAST_TLS_CA")?,
            cert_pem: pem("HOLDFAST_TLS_CERT")?,
            key_pem: pem("HOLDFAST_TLS_KEY")?,
            server_name: var("HOLDFAST_TLS_SERVER_NAME"),
        };
        let wants_tls = var("HOLDFAST_TLS").is_some_and(|v| v != "0" && v != "false")
            || tls.ca_pem.is_some()
            || tls.cert_pem.is_some()
            || tls.key_pem.is_some()
            || tls.server_name.is_some();
        if tls.cert_pem.is_some() != tls.key_pem.is_some() {
            return Err(Error::config(
                "HOLDFAST_TLS_CERT",
                "HOLDFAST_TLS_CERT and HOLDFAST_TLS_KEY go together: set both for mutual TLS, or neither",
            ));
        }
        Ok(Self {
            tls: wants_tls.then_some(tls),
            api_key: var("HOLDFAST_API_KEY"),
            ..Self::default()
        })
    }
}

fn read_pem(option: &str, path: &Path) -> Result<Vec<u8>, Error> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::config(option, format!("cannot read {}: {}", path.display(), io_words(&e))))?;
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(Error::config(
            option,
            format!("{} holds no PEM block (-----BEGIN ...)", path.display()),
        ));
    }
    Ok(bytes)
}

fn io_words(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    }
}

/// Refuses the address shapes that would only fail later with the transport's own words.
pub(crate) fn check_address(addr: &str) -> Result<(), Error> {
    let option = "address";
    if let Some((scheme, rest)) = addr.split_once("://") {
        return Err(Error::config(
            option,
            format!(
                "\"{addr}\" has a scheme ({scheme}://): give host:port only, e.g. {rest} (TLS is set with ConnectOptions::tls)"
            ),
        ));
    }
    let Some((host, port)) = addr.rsplit_once(':') else {
        return Err(Error::config(
            option,
            format!("\"{addr}\" has no port: give host:port, e.g. {addr}:50051"),
        ));
    };
    if host.is_empty() || (host.contains(':') && !(host.starts_with('[') && host.ends_with(']'))) {
        return Err(Error::config(
            option,
            format!("\"{addr}\" is not host:port (an IPv6 address goes in brackets: [::1]:50051)"),
        ));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(()),
        _ => Err(Error::config(
            option,
            format!("the port \"{port}\" of \"{addr}\" is not a number from 1 to 65535"),
        )),
    }
}

/// The endpoint for `addr` with these options' TLS and timeouts.
pub(crate) fn endpoint(addr: &str, options: &ConnectOptions) -> Result<Endpoint, Error> {
    check_address(addr)?;
    let scheme = if options.tls.is_some() { "https" } else { "http" };
    let mut endpoint = Endpoint::from_shared(format!("{scheme}://{addr}"))
        .map_err(|e| Error::config("address", format!("\"{addr}\" is not a valid address: {e}")))?
        .connect_timeout(options.connect_timeout)
        .tcp_nodelay(true);
    if let Some(tls) = &options.tls {
        let mut config = ClientTlsConfig::new();
        config = match &tls.ca_pem {
            Some(ca) => config.ca_certificate(Certificate::from_pem(ca)),
            None => config.with_native_roots(),
        };
        match (&tls.cert_pem, &tls.key_pem) {
            (Some(cert), Some(key)) => config = config.identity(Identity::from_pem(cert, key)),
            (None, None) => {}
            _ => {
                return Err(Error::config(
                    "TlsOptions::cert_pem",
                    "cert_pem and key_pem go together",
                ));
            }
        }
        if let Some(name) = &tls.server_name {
            config = config.domain_name(name.clone());
        }
        endpoint = endpoint.tls_config(config).map_err(|e| {
            Error::config(
                "TlsOptions",
                format!("the TLS settings are not usable: {}", cause_in_words(&e)),
            )
        })?;
    }
    Ok(endpoint)
}

/// Connects `endpoint`, saying in words why it could not.
pub(crate) async fn connect_channel(addr: &str, endpoint: Endpoint) -> Result<Channel, Error> {
    endpoint.connect().await.map_err(|e| Error::Unavailable {
        addr: addr.to_string(),
        cause: cause_in_words(&e),
    })
}

/// Puts the API key on every call.
#[derive(Clone)]
pub struct ApiKey(Option<MetadataValue<Ascii>>);

impl ApiKey {
    pub(crate) fn new(key: Option<&str>) -> Result<Self, Error> {
        let value = match key {
            None => None,
            Some(key) => Some(format!("Bearer {key}").parse().map_err(|_| {
                Error::config(
                    "api_key",
                    "the API key has characters that cannot go in gRPC metadata (printable ASCII only)",
                )
            })?),
        };
        Ok(Self(value))
    }
}

impl Interceptor for ApiKey {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }
}
