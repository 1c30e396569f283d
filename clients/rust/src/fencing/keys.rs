//! The guard's key ring: the public keys whose signed fences it accepts, from a JWK set (a string,
//! a file, or fetched once from a URL such as the server's `/fence-keys`), each checked on load.
//! A ring never changes once built; to rotate, build a guard with a new ring.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, VerifyingKey};
use http_body_util::{BodyExt as _, Empty, Limited};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::wire::SignedFence;

/// How long [`KeyRing::fetch`] waits for the whole answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest JWK set [`KeyRing::fetch`] reads.
const FETCH_LIMIT: usize = 1 << 20;

/// Why a key ring could not be built. The message names where the keys came from and the key at
/// fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRingError {
    /// The message, in words.
    pub message: String,
}

impl std::fmt::Display for KeyRingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for KeyRingError {}

fn ring_error(source: &str, what: impl std::fmt::Display) -> KeyRingError {
    KeyRingError {
        message: format!("fence key ring from {source}: {what}"),
    }
}

/// A key's id: the first 16 characters of the base64url (no padding) of the SHA-256 of its raw
/// 32-byte public key.
pub fn key_id(public_key: &[u8; 32]) -> String {
    let mut id = URL_SAFE_NO_PAD.encode(Sha256::digest(public_key));
    id.truncate(16);
    id
}

/// The public keys a guard accepts signed fences from, by key id. Cheap to clone.
#[derive(Clone)]
pub struct KeyRing {
    keys: Arc<HashMap<String, VerifyingKey>>,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing").field("key_ids", &self.key_ids()).finish()
    }
}

impl KeyRing {
    /// A ring of raw 32-byte Ed25519 public keys (each one's id is computed from it).
    pub fn from_public_keys<'a>(keys: impl IntoIterator<Item = &'a [u8; 32]>) -> Result<Self, KeyRingError> {
        let mut ring = HashMap::new();
        for raw in keys {
            let key = VerifyingKey::from_bytes(raw)
                .map_err(|_| ring_error("raw keys", format!("key {} is not an Ed25519 public key", key_id(raw))))?;
            ring.insert(key_id(raw), key);
        }
        Self::new(ring, "raw keys")
    }

    /// A ring from the keys of the server's `AdminService.GetFenceKeys` answer.
    pub fn from_fence_keys(answer: &crate::v1::GetFenceKeysResponse) -> Result<Self, KeyRingError> {
        let source = "GetFenceKeys";
        let mut ring = HashMap::new();
        for key in &answer.keys {
            let raw: [u8; 32] = key.public_key.as_slice().try_into().map_err(|_| {
                ring_error(
                    source,
                    format!("key \"{}\" is {} bytes, not 32", key.key_id, key.public_key.len()),
                )
            })?;
            let checked = checked_key(source, &key.key_id, key.algorithm == "Ed25519", &raw)?;
            ring.insert(key.key_id.clone(), checked);
        }
        Self::new(ring, source)
    }

    /// A ring from a JWK set (RFC 7517 and 8037) in a string, as the server publishes it.
    pub fn from_jwks(jwks: &str) -> Result<Self, KeyRingError> {
        Self::parse(jwks, "a JWK set string")
    }

    /// A ring from a JWK set in a file.
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<Self, KeyRingError> {
        let path = path.as_ref();
        let source = format!("file {}", path.display());
        let text = std::fs::read_to_string(path)
            .map_err(|err| ring_error(&source, format!("cannot read it: {}", io_words(&err))))?;
        Self::parse(&text, &source)
    }

    /// A ring from a JWK set fetched once from an `http://` URL, such as the holdfast server's
    /// `http://HOST:PORT/fence-keys` (its HTTP listener, the one serving `/metrics`). Waits at most
    /// 10 s.
    pub async fn fetch(url: &str) -> Result<Self, KeyRingError> {
        let source = format!("URL {url}");
        let uri: http::Uri = url.parse().map_err(|_| ring_error(&source, "it is not a URL"))?;
        if uri.scheme_str() != Some("http") {
            return Err(ring_error(
                &source,
                "only http:// URLs are fetched; give an https key set as a file or a string",
            ));
        }
        let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http::<Empty<bytes::Bytes>>();
        let answer = async {
            let response = client.get(uri).await.map_err(|err| {
                let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&err);
                let io = std::iter::from_fn(|| {
                    let this = cause?;
                    cause = this.source();
                    Some(this)
                })
                .find_map(|cause| cause.downcast_ref::<std::io::Error>());
                format!(
                    "cannot fetch it: {}",
                    io.map_or_else(|| "the connection failed".to_string(), io_words)
                )
            })?;
            let status = response.status();
            if status != http::StatusCode::OK {
                return Err(format!("the server answered HTTP {status}"));
            }
            let body = Limited::new(response.into_body(), FETCH_LIMIT).collect().await;
            body.map(|body| body.to_bytes())
                .map_err(|_| format!("the answer did not arrive whole (or is larger than {FETCH_LIMIT} bytes)"))
        };
        let body = match tokio::time::timeout(FETCH_TIMEOUT, answer).await {
            Ok(body) => body.map_err(|what| ring_error(&source, what))?,
            Err(_) => return Err(ring_error(&source, "no whole answer within 10 s")),
        };
        let text = std::str::from_utf8(&body).map_err(|_| ring_error(&source, "the answer is not UTF-8"))?;
        Self::parse(text, &source)
    }

    fn parse(text: &str, source: &str) -> Result<Self, KeyRingError> {
        let set: Value = serde_json::from_str(text).map_err(|_| ring_error(source, "it is not JSON"))?;
        let keys = set
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| ring_error(source, "it is not a JWK set: no \"keys\" array"))?;
        let mut ring = HashMap::new();
        for (index, jwk) in keys.iter().enumerate() {
            let field = |name: &str| jwk.get(name).and_then(Value::as_str).unwrap_or("");
            let kid = field("kid");
            let named = if kid.is_empty() {
                format!("#{index} (no kid)")
            } else {
                format!("\"{kid}\"")
            };
            let ed25519 = field("kty") == "OKP" && field("crv") == "Ed25519";
            let raw = URL_SAFE_NO_PAD
                .decode(field("x"))
                .ok()
                .and_then(|x| <[u8; 32]>::try_from(x).ok())
                .ok_or_else(|| ring_error(source, format!("key {named}: x is not 32 bytes of base64url")))?;
            ring.insert(kid.to_string(), checked_key(source, kid, ed25519, &raw)?);
        }
        Self::new(ring, source)
    }

    fn new(keys: HashMap<String, VerifyingKey>, source: &str) -> Result<Self, KeyRingError> {
        if keys.is_empty() {
            return Err(ring_error(source, "it has no keys"));
        }
        Ok(Self { keys: Arc::new(keys) })
    }

    /// The ids of the ring's keys, sorted.
    pub fn key_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.keys.keys().map(String::as_str).collect();
        ids.sort_unstable();
        ids
    }

    /// Whether a key of this id is in the ring.
    pub fn contains(&self, key_id: &str) -> bool {
        self.keys.contains_key(key_id)
    }

    /// Checks a fence's signature with the ring's key of its id: `false` when there is no such
    /// key or the signature does not verify (tell them apart with [`KeyRing::contains`]).
    pub fn verify(&self, fence: &SignedFence) -> bool {
        self.keys.get(&fence.key_id).is_some_and(|key| {
            key.verify_strict(fence.signed_part.as_bytes(), &Signature::from_bytes(&fence.signature))
                .is_ok()
        })
    }
}

/// Checks one key as it is loaded: Ed25519, a valid point, and an id that is the one computed
/// from it.
fn checked_key(source: &str, kid: &str, ed25519: bool, raw: &[u8; 32]) -> Result<VerifyingKey, KeyRingError> {
    if !ed25519 {
        return Err(ring_error(source, format!("key \"{kid}\" is not an OKP Ed25519 key")));
    }
    let computed = key_id(raw);
    if kid != computed {
        return Err(ring_error(
            source,
            format!("key \"{kid}\" does not match its public key, whose id is \"{computed}\""),
        ));
    }
    VerifyingKey::from_bytes(raw).map_err(|_| ring_error(source, format!("key \"{kid}\" is not an Ed25519 public key")))
}

fn io_words(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
        _ => err.kind().to_string(),
    }
}
