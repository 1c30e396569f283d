//! The fencing wire convention (docs/fencing.md): a holder sends the lock's name and its fencing
//! token with every request to a protected resource, as HTTP headers `Holdfast-Fence-Lock` and
//! `Holdfast-Fence-Token` or gRPC metadata `holdfast-fence-lock` and `holdfast-fence-token`. The
//! name is percent-encoded UTF-8 (as JavaScript's `encodeURIComponent` writes it), the token
//! unsigned decimal.

use http::{HeaderMap, HeaderName, HeaderValue};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use tonic::metadata::{MetadataMap, MetadataValue};

use crate::client::Grant;
use crate::lease::Lease;

/// The HTTP header that carries the lock's name.
pub const HTTP_LOCK_HEADER: &str = "Holdfast-Fence-Lock";
/// The HTTP header that carries the fencing token.
pub const HTTP_TOKEN_HEADER: &str = "Holdfast-Fence-Token";
/// The gRPC metadata key that carries the lock's name.
pub const GRPC_LOCK_KEY: &str = "holdfast-fence-lock";
/// The gRPC metadata key that carries the fencing token.
pub const GRPC_TOKEN_KEY: &str = "holdfast-fence-token";

/// What `encodeURIComponent` leaves as it is: letters, digits and `-_.!~*'()`.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// A lock's fence as it travels: the encoded name and the token, both plain ASCII.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence {
    /// The lock's name, percent-encoded.
    pub lock: String,
    /// The fencing token in decimal.
    pub token: String,
}

impl Fence {
    /// The wire form of `lock`'s fence with `fencing_token`.
    pub fn new(lock: &str, fencing_token: u64) -> Self {
        Self {
            lock: utf8_percent_encode(lock, COMPONENT).to_string(),
            token: fencing_token.to_string(),
        }
    }

    /// Sets the two HTTP headers (replacing any there).
    pub fn set_headers(&self, headers: &mut HeaderMap) {
        headers.insert(HeaderName::from_static("holdfast-fence-lock"), ascii(&self.lock));
        headers.insert(HeaderName::from_static("holdfast-fence-token"), ascii(&self.token));
    }

    /// Sets the two gRPC metadata entries (replacing any there).
    pub fn set_metadata(&self, metadata: &mut MetadataMap) {
        let value = |text: &str| MetadataValue::try_from(text).expect("a fence is plain ASCII");
        metadata.insert(GRPC_LOCK_KEY, value(&self.lock));
        metadata.insert(GRPC_TOKEN_KEY, value(&self.token));
    }
}

fn ascii(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).expect("a fence is plain ASCII")
}

impl Lease {
    /// This lease's fence in its wire form.
    pub fn fence(&self) -> Fence {
        Fence::new(self.name(), self.fencing_token())
    }

    /// Puts this lease's fence on an outgoing HTTP request's headers (for example
    /// `reqwest::RequestBuilder::headers`, or `request.headers_mut()` of an `http::Request`).
    pub fn fence_headers(&self, headers: &mut HeaderMap) {
        self.fence().set_headers(headers);
    }

    /// Puts this lease's fence on an outgoing gRPC request's metadata.
    pub fn fence_request<T>(&self, request: &mut tonic::Request<T>) {
        self.fence().set_metadata(request.metadata_mut());
    }
}

impl Grant {
    /// This grant's fence in its wire form.
    pub fn fence(&self) -> Fence {
        Fence::new(&self.name, self.fencing_token)
    }
}
