//! Steps 1 to 7 of the guard's order of checks (clients/conformance/signed-fence.md), none of
//! which asks the store: read the fence, require a signed one, its key, its signature, its
//! namespace, its lock, and optionally its lease end.

use std::time::Duration;

use http::HeaderMap;

use super::keys::KeyRing;
use super::refusal::Refusal;
use super::wire::{SignedFence, decode_name, unsigned_token};
use crate::fence::{
    GRPC_FENCE_KEY, GRPC_LOCK_KEY, GRPC_TOKEN_KEY, HTTP_FENCE_HEADER, HTTP_LOCK_HEADER, HTTP_TOKEN_HEADER,
};

/// Which names a request's fence travels under: HTTP headers or gRPC metadata (the same header
/// names, written in lower case in messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// `Holdfast-Fence`, `Holdfast-Fence-Lock`, `Holdfast-Fence-Token`.
    Http,
    /// `holdfast-fence`, `holdfast-fence-lock`, `holdfast-fence-token`.
    Grpc,
}

impl Wire {
    fn names(self) -> [&'static str; 3] {
        match self {
            Self::Http => [HTTP_FENCE_HEADER, HTTP_LOCK_HEADER, HTTP_TOKEN_HEADER],
            Self::Grpc => [GRPC_FENCE_KEY, GRPC_LOCK_KEY, GRPC_TOKEN_KEY],
        }
    }
}

/// The fence of an admitted request, in the request's extensions for the handler
/// (`request.extensions().get::<AdmittedFence>()`, in tonic as in axum or hyper). An unsigned
/// fence has an empty namespace and key id, no lease end, and `signed` false.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmittedFence {
    /// The holdfast namespace the fence was issued in (empty for an unsigned fence).
    pub namespace: String,
    /// The lock's name.
    pub lock: String,
    /// The fencing token.
    pub token: u64,
    /// The signed lease end (Unix ms), when the fence states one.
    pub lease_end_ms: Option<u64>,
    /// The id of the key that signed it (empty for an unsigned fence).
    pub key_id: String,
    /// Whether the fence was signed.
    pub signed: bool,
}

/// What a guard checks before it asks its store: its key ring (none: unsigned fences only, as
/// before signed fences), the namespace it expects (default `default`), whether it accepts
/// unsigned fences once it has keys (default no), and the optional lease-end check.
#[derive(Clone, Debug)]
pub struct FenceRules {
    /// The keys signed fences are checked with.
    pub ring: Option<KeyRing>,
    /// The namespace a signed fence must name.
    pub namespace: String,
    /// With a ring: whether a request with only the unsigned headers is admitted too.
    pub accept_unsigned: bool,
    /// When set, a signed fence whose lease end is more than this long ago by this machine's
    /// clock is refused (`fence_lease_ended`); it assumes the two clocks differ by less.
    pub lease_end_skew: Option<Duration>,
}

impl Default for FenceRules {
    fn default() -> Self {
        Self {
            ring: None,
            namespace: "default".to_string(),
            accept_unsigned: false,
            lease_end_skew: None,
        }
    }
}

/// The values of one header: none, one, or an error for a header sent twice (or not ASCII).
fn single<'a>(headers: &'a HeaderMap, name: &'static str, field: &'static str) -> Result<Option<&'a str>, Refusal> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else { return Ok(None) };
    let malformed = |what: &str| Refusal::Malformed {
        field,
        header: name,
        what: format!("header {name} {what}"),
    };
    if values.next().is_some() {
        return Err(malformed("is sent more than once"));
    }
    first
        .to_str()
        .map(Some)
        .map_err(|_| malformed("is not printable ASCII"))
}

impl FenceRules {
    /// Checks a request's fence headers, steps 1 to 7, for the resource protected by `lock`
    /// (`None`: the guard does not know it, and step 6 is skipped), at `now_ms` (Unix ms) by the
    /// guard's clock. A guard without a ring reads only the unsigned headers.
    pub fn admit(
        &self,
        headers: &HeaderMap,
        wire: Wire,
        lock: Option<&str>,
        now_ms: u64,
    ) -> Result<AdmittedFence, Refusal> {
        let [fence_name, lock_name, token_name] = wire.names();
        // Step 1: each header once, and well formed.
        let signed = single(headers, fence_name, "fence")?;
        let unsigned = Unsigned {
            lock: single(headers, lock_name, "lock")?,
            token: single(headers, token_name, "token")?,
            lock_name,
            token_name,
        };
        let (Some(signed), Some(ring)) = (signed, &self.ring) else {
            return self.admit_unsigned(&unsigned, fence_name, lock);
        };
        let fence = SignedFence::parse(signed).map_err(|what| Refusal::Malformed {
            field: "fence",
            header: fence_name,
            what: format!("header {fence_name}: {what}"),
        })?;
        let disagrees = |field, header: &'static str| Refusal::Malformed {
            field,
            header,
            what: format!("header {header} disagrees with the signed fence (header {fence_name})"),
        };
        if unsigned.token.is_some() && unsigned.token()? != fence.token {
            return Err(disagrees("token", token_name));
        }
        if unsigned.lock.is_some() && unsigned.lock()? != fence.lock {
            return Err(disagrees("lock", lock_name));
        }
        // Steps 3 and 4: the key and the signature.
        if !ring.contains(&fence.key_id) {
            return Err(Refusal::UnknownKey { key_id: fence.key_id });
        }
        if !ring.verify(&fence) {
            return Err(Refusal::BadSignature { key_id: fence.key_id });
        }
        // Step 5 and 6: what the fence was issued for.
        if fence.namespace != self.namespace {
            return Err(Refusal::AnotherNamespace {
                namespace: fence.namespace,
                expected: self.namespace.clone(),
            });
        }
        check_lock(&fence.lock, lock)?;
        // Step 7: the lease end, when asked for and stated.
        if let (Some(skew), Some(lease_end_ms)) = (self.lease_end_skew, fence.lease_end_ms) {
            let skew_ms = u64::try_from(skew.as_millis()).unwrap_or(u64::MAX);
            if now_ms > lease_end_ms.saturating_add(skew_ms) {
                return Err(Refusal::LeaseEnded {
                    lock: fence.lock,
                    token: fence.token,
                    lease_end_ms,
                    now_ms,
                    skew_ms,
                });
            }
        }
        Ok(AdmittedFence {
            namespace: fence.namespace,
            lock: fence.lock,
            token: fence.token,
            lease_end_ms: fence.lease_end_ms,
            key_id: fence.key_id,
            signed: true,
        })
    }

    /// A request without a signed fence (or a guard without a ring): fencing.json's rules (the
    /// token is looked at first), then step 2 and step 6.
    fn admit_unsigned(
        &self,
        unsigned: &Unsigned,
        fence_name: &'static str,
        lock: Option<&str>,
    ) -> Result<AdmittedFence, Refusal> {
        if self.ring.is_some() && unsigned.lock.is_none() && unsigned.token.is_none() {
            return Err(Refusal::Missing {
                field: "fence",
                header: fence_name,
            });
        }
        let token = unsigned.token()?;
        let name = unsigned.lock()?;
        if self.ring.is_some() && !self.accept_unsigned {
            return Err(Refusal::SignedRequired { header: fence_name });
        }
        check_lock(&name, lock)?;
        Ok(AdmittedFence {
            namespace: String::new(),
            lock: name,
            token,
            lease_end_ms: None,
            key_id: String::new(),
            signed: false,
        })
    }
}

/// The unsigned headers' values, read on demand.
struct Unsigned<'a> {
    lock: Option<&'a str>,
    token: Option<&'a str>,
    lock_name: &'static str,
    token_name: &'static str,
}

impl Unsigned<'_> {
    fn token(&self) -> Result<u64, Refusal> {
        let name = self.token_name;
        let text = self.token.ok_or(Refusal::Missing {
            field: "token",
            header: name,
        })?;
        unsigned_token(text).map_err(|what| Refusal::Malformed {
            field: "token",
            header: name,
            what: format!("header {name} {what}"),
        })
    }

    fn lock(&self) -> Result<String, Refusal> {
        let name = self.lock_name;
        let text = self.lock.ok_or(Refusal::Missing {
            field: "lock",
            header: name,
        })?;
        decode_name(text).map_err(|what| Refusal::Malformed {
            field: "lock",
            header: name,
            what: format!("header {name} {what}"),
        })
    }
}

/// Step 6: exact equality with the resource's lock, when the guard knows it.
fn check_lock(fence_lock: &str, lock: Option<&str>) -> Result<(), Refusal> {
    match lock {
        Some(expected) if expected != fence_lock => Err(Refusal::AnotherLock {
            lock: fence_lock.to_string(),
            expected: expected.to_string(),
        }),
        _ => Ok(()),
    }
}
