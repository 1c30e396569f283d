//! Why a guard turned a request away, with the status, the message and the JSON body of
//! clients/conformance/signed-fence.md ("Refusal bodies and messages"). Tokens and times are
//! decimal strings; a fence, a signature or a token value beyond those listed is never echoed.

use serde_json::{Map, Value, json};

/// A guard's refusal. [`Refusal::error`] is its `error` field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No fence, or a part of one missing (`field`: `fence`, `lock` or `token`).
    Missing {
        /// The part that is missing.
        field: &'static str,
        /// The header (or metadata key) that would carry it.
        header: &'static str,
    },
    /// A header sent twice, a rule of the format broken, or the unsigned headers disagreeing
    /// with the signed fence.
    Malformed {
        /// The part at fault: `fence`, `lock` or `token`.
        field: &'static str,
        /// The header (or metadata key) at fault.
        header: &'static str,
        /// What is wrong, in words.
        what: String,
    },
    /// Only unsigned headers, and the guard requires signed fences.
    SignedRequired {
        /// The header that would carry the signed fence.
        header: &'static str,
    },
    /// The fence's key id is not in the guard's ring.
    UnknownKey {
        /// The fence's key id.
        key_id: String,
    },
    /// The signature does not verify with the ring's key of that id.
    BadSignature {
        /// The fence's key id.
        key_id: String,
    },
    /// A fence for another namespace.
    AnotherNamespace {
        /// The fence's namespace.
        namespace: String,
        /// The guard's.
        expected: String,
    },
    /// A fence for another lock than the resource's.
    AnotherLock {
        /// The fence's lock.
        lock: String,
        /// The resource's.
        expected: String,
    },
    /// The lease-end check is on and the fence's lease has certainly ended.
    LeaseEnded {
        /// The fence's lock.
        lock: String,
        /// Its token.
        token: u64,
        /// Its signed lease end (Unix ms).
        lease_end_ms: u64,
        /// The guard's clock (Unix ms).
        now_ms: u64,
        /// The skew allowance, in ms.
        skew_ms: u64,
    },
    /// The store has seen a newer token for the lock.
    Stale {
        /// The lock.
        lock: String,
        /// The request's token.
        token: u64,
        /// The newest the store has seen.
        newest: u64,
    },
    /// The store could not answer within its bound.
    StoreUnavailable {
        /// The lock.
        lock: String,
        /// Why, in words.
        cause: String,
    },
}

impl Refusal {
    /// The `error` field: `missing_fence`, `malformed_fence`, `stale_fencing_token`, ...
    pub fn error(&self) -> &'static str {
        match self {
            Self::Missing { .. } => "missing_fence",
            Self::Malformed { .. } => "malformed_fence",
            Self::SignedRequired { .. } => "signed_fence_required",
            Self::UnknownKey { .. } => "unknown_fence_key",
            Self::BadSignature { .. } => "bad_fence_signature",
            Self::AnotherNamespace { .. } => "fence_for_another_namespace",
            Self::AnotherLock { .. } => "fence_for_another_lock",
            Self::LeaseEnded { .. } => "fence_lease_ended",
            Self::Stale { .. } => "stale_fencing_token",
            Self::StoreUnavailable { .. } => "fence_store_unavailable",
        }
    }

    /// The HTTP status: 400, 403, 409 or 503.
    pub fn http_status(&self) -> http::StatusCode {
        match self {
            Self::Missing { .. } | Self::Malformed { .. } => http::StatusCode::BAD_REQUEST,
            Self::SignedRequired { .. }
            | Self::UnknownKey { .. }
            | Self::BadSignature { .. }
            | Self::AnotherNamespace { .. }
            | Self::AnotherLock { .. } => http::StatusCode::FORBIDDEN,
            Self::LeaseEnded { .. } | Self::Stale { .. } => http::StatusCode::CONFLICT,
            Self::StoreUnavailable { .. } => http::StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The gRPC status code.
    pub fn grpc_code(&self) -> tonic::Code {
        match self.http_status().as_u16() {
            400 => tonic::Code::InvalidArgument,
            403 => tonic::Code::PermissionDenied,
            409 => tonic::Code::FailedPrecondition,
            _ => tonic::Code::Unavailable,
        }
    }

    /// The message: the gRPC status message, and the HTTP body's `message`.
    pub fn message(&self) -> String {
        match self {
            Self::Missing { header, .. } => format!("missing fence: header {header} is required"),
            Self::Malformed { what, .. } => format!("malformed fence: {what}"),
            Self::SignedRequired { header } => format!("this resource requires a signed fence (header {header})"),
            Self::UnknownKey { key_id } => format!("fence signed by unknown key \"{key_id}\""),
            Self::BadSignature { key_id } => format!("fence signature does not verify with key \"{key_id}\""),
            Self::AnotherNamespace { namespace, expected } => format!(
                "fence for namespace {} refused: this resource is protected in namespace {}",
                quoted(namespace),
                quoted(expected)
            ),
            Self::AnotherLock { lock, expected } => format!(
                "fence for lock {} refused: this resource is protected by lock {}",
                quoted(lock),
                quoted(expected)
            ),
            Self::LeaseEnded {
                lock,
                token,
                lease_end_ms,
                now_ms,
                skew_ms,
            } => format!(
                "fence for lock {} (token {token}) refused: its lease ended at {lease_end_ms}, now is {now_ms} (skew allowance {skew_ms} ms)",
                quoted(lock)
            ),
            Self::Stale { lock, token, newest } => format!(
                "stale fencing token for lock {}: {token} is older than {newest}, the newest seen",
                quoted(lock)
            ),
            Self::StoreUnavailable { lock, cause } => {
                format!("fence store unavailable for lock {}: {cause}", quoted(lock))
            }
        }
    }

    /// The HTTP body: `error`, `message` and the refusal's own fields.
    pub fn body(&self) -> Value {
        let mut body = Map::new();
        body.insert("error".into(), json!(self.error()));
        body.insert("message".into(), json!(self.message()));
        let fields = match self {
            Self::Missing { field, header } | Self::Malformed { field, header, .. } => {
                json!({ "field": field, "header": header })
            }
            Self::SignedRequired { header } => json!({ "header": header }),
            Self::UnknownKey { key_id } | Self::BadSignature { key_id } => json!({ "key_id": key_id }),
            Self::AnotherNamespace { namespace, expected } => json!({ "namespace": namespace, "expected": expected }),
            Self::AnotherLock { lock, expected } => json!({ "lock": lock, "expected": expected }),
            Self::LeaseEnded {
                lock,
                token,
                lease_end_ms,
                now_ms,
                skew_ms,
            } => json!({
                "lock": lock, "token": token.to_string(), "lease_end_ms": lease_end_ms.to_string(),
                "now_ms": now_ms.to_string(), "skew_ms": skew_ms.to_string(),
            }),
            Self::Stale { lock, token, newest } => {
                json!({ "lock": lock, "token": token.to_string(), "newest": newest.to_string() })
            }
            Self::StoreUnavailable { lock, .. } => json!({ "lock": lock }),
        };
        if let Value::Object(fields) = fields {
            body.extend(fields);
        }
        Value::Object(body)
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for Refusal {}

/// A name in double quotes, as JSON (and JavaScript's JSON.stringify) writes it.
fn quoted(name: &str) -> String {
    Value::from(name).to_string()
}
