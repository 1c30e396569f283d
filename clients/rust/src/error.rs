//! One error type whose message names the address, the lock or the option, and the cause in words.

use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::time::Duration;

use tonic::Code;

use crate::v1::LostReason;

/// What went wrong, in words. Each variant keeps the parts a program may look at; `Debug` shows
/// the same words as `Display`, so that `fn main() -> Result<(), holdfast::Error>` prints them.
#[derive(Clone)]
#[non_exhaustive]
pub enum Error {
    /// An option (or the environment variable that sets it) is wrong: `option` names it.
    Config {
        /// The option or environment variable, e.g. `HOLDFAST_TLS_CA`.
        option: String,
        /// What is wrong with it and what to change.
        cause: String,
    },
    /// The server at `addr` could not be reached, or the connection broke.
    Unavailable {
        /// The address given to [`Client::connect`](crate::Client::connect).
        addr: String,
        /// Why, in words.
        cause: String,
    },
    /// The server answered a call with an error status.
    Refused {
        /// The server's address.
        addr: String,
        /// What was asked, e.g. `acquire lock "orders"`.
        what: String,
        /// The gRPC status code.
        code: Code,
        /// The server's message (holdfast's messages are written for people).
        message: String,
    },
    /// The lock was not granted within the wait asked for.
    NotAcquired {
        /// The lock's name.
        name: String,
        /// The wait asked for.
        wait: Duration,
    },
    /// The lease was lost (or could no longer be vouched for): stop the work it protects.
    Lost(LostError),
    /// The server ended this call's wait to break a deadlock (docs/deadlocks.md): its owner (or
    /// session) waited, through a cycle, for a lock it holds itself. Nothing else it holds was
    /// released: give back what you hold, pause a short random while, and try again.
    Deadlock {
        /// The server's address.
        addr: String,
        /// The lock the ended call waited for (`None` for a call that names no one lock).
        name: Option<String>,
        /// The server's message, unchanged: the cycle in words (each lock, its holder's owner,
        /// what that owner waits for).
        message: String,
    },
    /// The session has ended; `in_flight` says the operation was sent before the end and not
    /// answered, so it may or may not have taken effect.
    SessionEnded {
        /// The server's address.
        addr: String,
        /// Why the session ended.
        cause: String,
        /// The operation was sent and not answered.
        in_flight: bool,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config { option, cause } => write!(f, "holdfast option {option}: {cause}"),
            Error::Unavailable { addr, cause } => write!(f, "holdfast at {addr} is unavailable: {cause}"),
            Error::Refused {
                addr,
                what,
                code,
                message,
            } => {
                write!(
                    f,
                    "holdfast at {addr} refused to {what}: {}: {message}",
                    code_in_words(*code)
                )
            }
            Error::NotAcquired { name, wait } => {
                write!(
                    f,
                    "lock \"{name}\" was not acquired within {}: another holder has it",
                    millis(*wait)
                )
            }
            Error::Lost(lost) => lost.fmt(f),
            Error::Deadlock {
                addr,
                name: Some(name),
                message,
            } => write!(f, "holdfast at {addr} ended the wait for lock \"{name}\": {message}"),
            Error::Deadlock { addr, message, .. } => write!(f, "holdfast at {addr} ended a wait: {message}"),
            Error::SessionEnded {
                addr,
                cause,
                in_flight: true,
            } => write!(
                f,
                "the session with holdfast at {addr} ended before this operation was answered ({cause}); it may or may not have taken effect"
            ),
            Error::SessionEnded {
                addr,
                cause,
                in_flight: false,
            } => {
                write!(
                    f,
                    "the session with holdfast at {addr} has ended ({cause}): open a new session"
                )
            }
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Error::Lost(lost) => Some(lost),
            _ => None,
        }
    }
}

impl Error {
    /// The gRPC status code this error stands for (`Unavailable` for a connection that failed,
    /// `DeadlineExceeded` for a lock not acquired in time, `Aborted` for a lost lease or a deadlock).
    pub fn code(&self) -> Code {
        match self {
            Error::Config { .. } => Code::InvalidArgument,
            Error::Unavailable { .. } | Error::SessionEnded { .. } => Code::Unavailable,
            Error::Refused { code, .. } => *code,
            Error::NotAcquired { .. } => Code::DeadlineExceeded,
            Error::Lost(_) | Error::Deadlock { .. } => Code::Aborted,
        }
    }

    pub(crate) fn config(option: impl Into<String>, cause: impl Into<String>) -> Self {
        Error::Config {
            option: option.into(),
            cause: cause.into(),
        }
    }

    /// The error for a call's or a session operation's `status`: a transport failure becomes
    /// [`Error::Unavailable`] with its cause in words, a deadlock ([`is_deadlock`])
    /// [`Error::Deadlock`] naming `lock`, anything else [`Error::Refused`] with the server's message.
    pub(crate) fn from_status(addr: &str, what: impl Into<String>, lock: Option<&str>, status: tonic::Status) -> Self {
        if let Some(cause) = transport_cause(&status) {
            return Error::Unavailable {
                addr: addr.to_string(),
                cause,
            };
        }
        if is_deadlock(&status) {
            return Error::Deadlock {
                addr: addr.to_string(),
                name: lock.map(str::to_string),
                message: status.message().to_string(),
            };
        }
        Error::Refused {
            addr: addr.to_string(),
            what: what.into(),
            code: status.code(),
            message: status.message().to_string(),
        }
    }
}

/// Whether a failed call or session operation was ended to break a deadlock
/// (clients/conformance/deadlock.json): `Aborted`, and the trailing metadata
/// `holdfast-reason: deadlock` or (a session operation's error, which has no metadata) a message
/// that starts with `deadlock: `. A lost lease is `Aborted` too, and is not one. Every call of this
/// crate that waits applies it ([`Error::Deadlock`]); it is public for calls made with
/// [`Client::lock_service`](crate::Client::lock_service).
pub fn is_deadlock(status: &tonic::Status) -> bool {
    status.code() == Code::Aborted
        && (status
            .metadata()
            .get("holdfast-reason")
            .is_some_and(|reason| reason == "deadlock")
            || status.message().starts_with("deadlock: "))
}

/// Why a lease is lost. `code` is `LostReason::Unspecified` when this client decided alone: its
/// local deadline passed, a confirmation came after it, or the stream ended without a `lost` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostError {
    /// The lock's name.
    pub name: String,
    /// Why, in words.
    pub reason: String,
    /// Why, for programs: the server's `LostReason`, or `Unspecified`.
    pub code: LostReason,
}

impl fmt::Display for LostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lock \"{}\" is lost: {}", self.name, self.reason)
    }
}

impl StdError for LostError {}

pub(crate) fn millis(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

pub(crate) const HTTP_LISTENER_CAUSE: &str = "it answers HTTP/1, not gRPC: this looks like holdfast's --http-listen port (dashboard and metrics); give the port of its --listen";
pub(crate) const WANTS_TLS_CAUSE: &str = "the server speaks TLS and this client does not: set the TLS options (ConnectOptions::tls; HOLDFAST_TLS_CA when its certificate is from a private CA)";

/// A gRPC status code in words.
pub(crate) fn code_in_words(code: Code) -> &'static str {
    match code {
        Code::Ok => "ok",
        Code::Cancelled => "cancelled",
        Code::Unknown => "unknown error",
        Code::InvalidArgument => "invalid argument",
        Code::DeadlineExceeded => "deadline exceeded",
        Code::NotFound => "not found",
        Code::AlreadyExists => "already exists",
        Code::PermissionDenied => "permission denied",
        Code::ResourceExhausted => "resource exhausted",
        Code::FailedPrecondition => "failed precondition",
        Code::Aborted => "aborted",
        Code::OutOfRange => "out of range",
        Code::Unimplemented => "not implemented by this server",
        Code::Internal => "internal error",
        Code::Unavailable => "unavailable",
        Code::DataLoss => "data loss",
        Code::Unauthenticated => "unauthenticated",
    }
}

/// The cause in words of a status that tonic made for a connection that failed (rather than one
/// the server sent), or `None` for the server's own status.
fn transport_cause(status: &tonic::Status) -> Option<String> {
    let source = status.source()?;
    Some(cause_in_words(source))
}

/// The cause of a connection error in words: the deepest error this client recognises in the
/// chain, else the chain's last message.
pub(crate) fn cause_in_words(err: &(dyn StdError + 'static)) -> String {
    let mut last = err.to_string();
    let mut current: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(words) = known_cause(e) {
            return words;
        }
        last = e.to_string();
        current = e.source();
    }
    last
}

fn known_cause(e: &(dyn StdError + 'static)) -> Option<String> {
    if e.downcast_ref::<tonic::TimeoutExpired>().is_some() {
        return Some(
            "no answer within the call timeout (ConnectOptions::call_timeout, plus the wait asked for)".to_string(),
        );
    }
    if let Some(tls) = e.downcast_ref::<rustls::Error>() {
        return Some(tls_cause(tls));
    }
    if let Some(io) = e.downcast_ref::<io::Error>() {
        if let Some(tls) = io.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
            return Some(tls_cause(tls));
        }
        return match io.kind() {
            io::ErrorKind::ConnectionRefused => Some(
                "connection refused: nothing listens there (is the holdfast server running, and is this the port of its --listen?)"
                    .to_string(),
            ),
            io::ErrorKind::ConnectionReset => Some("the connection was reset by the server".to_string()),
            io::ErrorKind::ConnectionAborted => Some("the connection was aborted".to_string()),
            io::ErrorKind::TimedOut => Some("no answer: the connection timed out".to_string()),
            io::ErrorKind::HostUnreachable | io::ErrorKind::NetworkUnreachable => {
                Some("the host cannot be reached from here".to_string())
            }
            io::ErrorKind::AddrNotAvailable => Some("the address is not available on this machine".to_string()),
            _ => None,
        };
    }
    if let Some(h2) = e.downcast_ref::<h2::Error>() {
        if h2.is_go_away() || h2.is_reset() {
            return None; // the server's own end of the connection: its status says more
        }
        return Some(format!("it does not speak gRPC over HTTP/2 with this client ({h2})"));
    }
    let text = e.to_string();
    if text.contains("timed out") {
        return Some("no answer before the timeout".to_string());
    }
    None
}

fn tls_cause(e: &rustls::Error) -> String {
    use rustls::{AlertDescription, CertificateError, Error as Tls};
    match e {
        Tls::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "its certificate is not signed by a CA this client trusts: set the TLS CA (TlsOptions::ca_pem, HOLDFAST_TLS_CA) to the CA that signed it".to_string()
        }
        Tls::InvalidCertificate(CertificateError::NotValidForName)
        | Tls::InvalidCertificate(CertificateError::NotValidForNameContext { .. }) => {
            "its certificate is not for this host name: set the server name (TlsOptions::server_name, HOLDFAST_TLS_SERVER_NAME) to a name the certificate carries".to_string()
        }
        Tls::InvalidCertificate(CertificateError::Expired)
        | Tls::InvalidCertificate(CertificateError::ExpiredContext { .. }) => "its certificate has expired".to_string(),
        Tls::InvalidCertificate(other) => format!("its certificate is not valid: {other:?}"),
        Tls::AlertReceived(AlertDescription::CertificateRequired) => {
            "the server wants a client certificate: set TlsOptions::cert_pem and key_pem (HOLDFAST_TLS_CERT, HOLDFAST_TLS_KEY)".to_string()
        }
        Tls::AlertReceived(
            AlertDescription::BadCertificate | AlertDescription::UnknownCA | AlertDescription::CertificateUnknown,
        ) => "the server refused this client's certificate: mutual TLS wants a certificate signed by the server's client CA (HOLDFAST_TLS_CERT, HOLDFAST_TLS_KEY)".to_string(),
        Tls::AlertReceived(alert) => format!("the server refused the TLS handshake ({alert:?})"),
        Tls::InvalidMessage(_) => {
            "the server does not speak TLS and this client does: connect without TLS, or give the port of its TLS listener".to_string()
        }
        other => format!("the TLS handshake failed: {other}"),
    }
}
