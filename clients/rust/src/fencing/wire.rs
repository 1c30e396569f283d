//! Reading fences: the unsigned pair's values (clients/conformance/fencing.json) and the signed
//! fence's string (clients/conformance/signed-fence.md). Errors say what is wrong in words, never
//! echoing the value.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The largest fence the format allows, in characters.
const MAX_FENCE_LEN: usize = 4096;
const MAX_DECIMAL: &str =
    "must be an unsigned decimal integer without sign, spaces or leading zeros, at most 18446744073709551615";

/// A signed fence read from its string: its fields decoded, and what its signature covers.
/// Reading checks the form only: [`KeyRing::verify`](super::KeyRing::verify) checks the signature.
#[derive(Clone, PartialEq, Eq)]
pub struct SignedFence {
    /// The id of the key that signed it.
    pub key_id: String,
    /// The holdfast namespace of the grant, decoded.
    pub namespace: String,
    /// The lock's name, decoded.
    pub lock: String,
    /// The grant's fencing token.
    pub token: u64,
    /// When the grant's lease ends (Unix ms, the server's clock); `None` when the fence states no end.
    pub lease_end_ms: Option<u64>,
    pub(crate) signed_part: String,
    pub(crate) signature: [u8; 64],
}

// The signature and the signed text stay out of logs.
impl std::fmt::Debug for SignedFence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignedFence")
            .field("key_id", &self.key_id)
            .field("namespace", &self.namespace)
            .field("lock", &self.lock)
            .field("token", &self.token)
            .field("lease_end_ms", &self.lease_end_ms)
            .finish_non_exhaustive()
    }
}

impl SignedFence {
    /// Reads a signed fence, checking every rule of the format's table; the error says which
    /// rule it breaks.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("the signed fence is empty".to_string());
        }
        if text.len() > MAX_FENCE_LEN {
            return Err(format!("the signed fence is longer than {MAX_FENCE_LEN} characters"));
        }
        if !text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return Err("the signed fence has a character that is not printable ASCII".to_string());
        }
        let fields: Vec<&str> = text.split(':').collect();
        let [version, key_id, namespace, lock, token, lease_end, signature] = fields[..] else {
            return Err(format!(
                "the signed fence has {} fields separated by ':', not 7",
                fields.len()
            ));
        };
        if version != "v1" {
            return Err("the signed fence's version is not v1".to_string());
        }
        let key_id_ok = (1..=64).contains(&key_id.len())
            && key_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !key_id_ok {
            return Err("the signed fence's key id must be 1 to 64 characters of A-Z a-z 0-9 _ -".to_string());
        }
        let namespace = decode_name(namespace).map_err(|what| format!("the signed fence's namespace {what}"))?;
        let lock = decode_name(lock).map_err(|what| format!("the signed fence's lock {what}"))?;
        let token = match decimal(token) {
            Some(0) | None => return Err("the signed fence's token must be an unsigned decimal integer without sign or leading zeros, from 1 to 18446744073709551615".to_string()),
            Some(token) => token,
        };
        let lease_end_ms = match lease_end {
            "" => None,
            text => Some(decimal(text).ok_or_else(|| format!("the signed fence's lease end {MAX_DECIMAL}, or empty"))?),
        };
        let signature = decode_signature(signature).ok_or(
            "the signed fence's signature must be 86 characters of base64url without padding, canonically encoded",
        )?;
        Ok(Self {
            key_id: key_id.to_string(),
            namespace,
            lock,
            token,
            lease_end_ms,
            signed_part: text[..text.rfind(':').expect("seven fields")].to_string(),
            signature,
        })
    }
}

fn decode_signature(text: &str) -> Option<[u8; 64]> {
    if text.len() != 86 {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
    // The engine refuses spare bits already; encoding again makes the canonical form plain.
    if URL_SAFE_NO_PAD.encode(&bytes) != text {
        return None;
    }
    bytes.try_into().ok()
}

/// Reads an unsigned decimal without sign or leading zeros (`0` alone allowed), at most u64::MAX.
pub(crate) fn decimal(text: &str) -> Option<u64> {
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    if !digits || (text.len() > 1 && text.starts_with('0')) {
        return None;
    }
    text.parse().ok()
}

/// Reads the unsigned token header: `Err` says what is wrong, after the header's name.
pub(crate) fn unsigned_token(text: &str) -> Result<u64, String> {
    decimal(text).ok_or_else(|| MAX_DECIMAL.to_string())
}

/// Decodes a percent-encoded UTF-8 name, accepting any valid percent-encoding; `Err` says what
/// is wrong, after the field's name.
pub(crate) fn decode_name(text: &str) -> Result<String, &'static str> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&first, tail)) = rest.split_first() {
        if first == b'%' {
            let hex = tail.get(..2).and_then(|pair| std::str::from_utf8(pair).ok());
            let byte = hex
                .filter(|pair| pair.bytes().all(|b| b.is_ascii_hexdigit()))
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or("is not valid percent-encoding")?;
            bytes.push(byte);
            rest = &tail[2..];
        } else {
            bytes.push(first);
            rest = tail;
        }
    }
    let name = String::from_utf8(bytes).map_err(|_| "does not decode to UTF-8")?;
    if name.is_empty() {
        return Err("is empty");
    }
    Ok(name)
}
