//! The fencing wire convention (docs/fencing.md): a holder sends the lock's name and its fencing
//! token with every request to a protected resource, as HTTP headers `Holdfast-Fence-Lock` and
//! `Holdfast-Fence-Token` or gRPC metadata `holdfast-fence-lock` and `holdfast-fence-token`. The
//! name is percent-encoded UTF-8 (as JavaScript's `encodeURIComponent` writes it), the token
//! unsigned decimal. A grant from a server with a fence signing key also carries a signed fence
//! (clients/conformance/signed-fence.md), sent as `Holdfast-Fence` (`holdfast-fence`) beside the
//! two unsigned headers.

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
/// The HTTP header that carries the signed fence.
pub const HTTP_FENCE_HEADER: &str = "Holdfast-Fence";
/// The gRPC metadata key that carries the signed fence.
pub const GRPC_FENCE_KEY: &str = "holdfast-fence";

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

/// A lock's fence as it travels: the encoded name, the token and, from a server that signs
/// fences, the signed fence; all plain ASCII. The signed fence is a bearer credential like the
/// grant's token: `Debug` does not show it; never log it.
#[derive(Clone, PartialEq, Eq)]
pub struct Fence {
    /// The lock's name, percent-encoded.
    pub lock: String,
    /// The fencing token in decimal.
    pub token: String,
    /// The signed fence, when the server signs fences.
    pub signed: Option<String>,
}

impl std::fmt::Debug for Fence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fence")
            .field("lock", &self.lock)
            .field("token", &self.token)
            .field("signed", &self.signed.is_some())
            .finish()
    }
}

impl Fence {
    /// The wire form of `lock`'s unsigned fence with `fencing_token`.
    pub fn new(lock: &str, fencing_token: u64) -> Self {
        Self {
            lock: utf8_percent_encode(lock, COMPONENT).to_string(),
            token: fencing_token.to_string(),
            signed: None,
        }
    }

    /// The same fence with a signed fence (as the server sent it; an empty one means none).
    pub fn with_signed(mut self, signed: Option<&str>) -> Self {
        self.signed = signed.filter(|s| !s.is_empty()).map(str::to_string);
        self
    }

    /// Sets the HTTP headers (replacing any there): the unsigned pair, and `Holdfast-Fence` when
    /// the fence is signed.
    pub fn set_headers(&self, headers: &mut HeaderMap) {
        headers.insert(HeaderName::from_static("holdfast-fence-lock"), ascii(&self.lock));
        headers.insert(HeaderName::from_static("holdfast-fence-token"), ascii(&self.token));
        if let Some(signed) = &self.signed {
            headers.insert(HeaderName::from_static("holdfast-fence"), ascii(signed));
        }
    }

    /// Sets the gRPC metadata entries (replacing any there): the unsigned pair, and
    /// `holdfast-fence` when the fence is signed.
    pub fn set_metadata(&self, metadata: &mut MetadataMap) {
        let value = |text: &str| MetadataValue::try_from(text).expect("a fence is plain ASCII");
        metadata.insert(GRPC_LOCK_KEY, value(&self.lock));
        metadata.insert(GRPC_TOKEN_KEY, value(&self.token));
        if let Some(signed) = &self.signed {
            metadata.insert(GRPC_FENCE_KEY, value(signed));
        }
    }
}

fn ascii(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).expect("a fence is plain ASCII")
}

impl Lease {
    /// This lease's fence in its wire form, with its latest signed fence (a Hold's renewals bring
    /// fresh ones stating the renewed lease's end).
    pub fn fence(&self) -> Fence {
        Fence::new(self.name(), self.fencing_token()).with_signed(self.signed_fence().as_deref())
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
    /// This grant's fence in its wire form, with its latest signed fence.
    pub fn fence(&self) -> Fence {
        Fence::new(&self.name, self.fencing_token).with_signed(self.signed_fence.as_deref())
    }

    /// Puts this grant's fence on an outgoing HTTP request's headers.
    pub fn fence_headers(&self, headers: &mut HeaderMap) {
        self.fence().set_headers(headers);
    }

    /// Puts this grant's fence on an outgoing gRPC request's metadata.
    pub fn fence_request<T>(&self, request: &mut tonic::Request<T>) {
        self.fence().set_metadata(request.metadata_mut());
    }
}
