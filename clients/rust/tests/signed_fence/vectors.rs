//! clients/conformance/signed-fence.json (badKeys, sign, verify, bind, leaseEnd, headers) and
//! fencing.json's parse and decide cases against the crate, and wrong implementations that must
//! each fail the same runner (the negative controls).

use std::time::Duration;

use holdfast::fencing::{AdmittedFence, FenceRules, KeyRing, Refusal, SignedFence, Wire, key_id};
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::support::*;

/// What a verifier or a guard does with a case; the crate's own, or a wrong one.
trait Implementation {
    /// Reads and verifies a fence: its fields, or `malformed`, `unknown_key`, `bad_signature`.
    fn verify(&self, ring: &KeyRing, fence: &str) -> Result<SignedFence, &'static str> {
        let parsed = SignedFence::parse(fence).map_err(|_| "malformed")?;
        if !ring.contains(&parsed.key_id) {
            return Err("unknown_key");
        }
        if !ring.verify(&parsed) {
            return Err("bad_signature");
        }
        Ok(parsed)
    }

    /// Steps 1 to 7 on HTTP headers, as [`rewrite`](Self::rewrite) leaves them.
    fn admit(
        &self,
        rules: &FenceRules,
        headers: &HeaderMap,
        lock: Option<&str>,
        now_ms: u64,
    ) -> Result<AdmittedFence, Refusal> {
        rules.admit(&self.rewrite(headers), Wire::Http, lock, now_ms)
    }

    /// What the implementation reads of the headers: all of them, as sent.
    fn rewrite(&self, headers: &HeaderMap) -> HeaderMap {
        headers.clone()
    }
}

struct TheCrate;
impl Implementation for TheCrate {}

/// Wrong: reads the fence and looks the key up, but never checks the signature.
struct SkipsTheSignature;
impl Implementation for SkipsTheSignature {
    fn verify(&self, ring: &KeyRing, fence: &str) -> Result<SignedFence, &'static str> {
        let parsed = SignedFence::parse(fence).map_err(|_| "malformed")?;
        if ring.contains(&parsed.key_id) {
            Ok(parsed)
        } else {
            Err("unknown_key")
        }
    }
}

/// Wrong: takes a lock whose name starts with the fence's (or the other way round) as the same.
struct MatchesTheLockByPrefix;
impl Implementation for MatchesTheLockByPrefix {
    fn admit(
        &self,
        rules: &FenceRules,
        headers: &HeaderMap,
        lock: Option<&str>,
        now_ms: u64,
    ) -> Result<AdmittedFence, Refusal> {
        let fence = rules.admit(headers, Wire::Http, None, now_ms)?;
        match lock {
            Some(lock) if !lock.starts_with(&fence.lock) && !fence.lock.starts_with(lock) => {
                Err(Refusal::AnotherLock {
                    lock: fence.lock,
                    expected: lock.to_string(),
                })
            }
            _ => Ok(fence),
        }
    }
}

/// Wrong: beside a signed fence, ignores the unsigned headers (so their disagreement passes).
struct IgnoresTheUnsignedHeaders;
impl Implementation for IgnoresTheUnsignedHeaders {
    fn rewrite(&self, headers: &HeaderMap) -> HeaderMap {
        let mut headers = headers.clone();
        if headers.contains_key("holdfast-fence") {
            headers.remove("holdfast-fence-lock");
            headers.remove("holdfast-fence-token");
        }
        headers
    }
}

/// Wrong: keeps the first value of a header sent twice (the Python guards' bug of issue 32).
struct KeepsTheFirstOfTwo;
impl Implementation for KeepsTheFirstOfTwo {
    fn rewrite(&self, headers: &HeaderMap) -> HeaderMap {
        headers
            .keys()
            .map(|name| (name.clone(), headers[name].clone()))
            .collect()
    }
}

/// Wrong: reads tokens leniently (spaces, a sign, leading zeros), as a plain integer parse would.
struct LenientTokens;
impl Implementation for LenientTokens {
    fn rewrite(&self, headers: &HeaderMap) -> HeaderMap {
        let mut headers = headers.clone();
        let lenient = headers
            .get("holdfast-fence-token")
            .and_then(|v| v.to_str().ok())
            .and_then(|t| t.trim().trim_start_matches('+').parse::<u64>().ok());
        if let Some(token) = lenient {
            headers.insert("holdfast-fence-token", HeaderValue::from(token));
        }
        headers
    }
}

fn ring() -> KeyRing {
    KeyRing::from_jwks(&ring_jwks()).unwrap_or_else(|e| panic!("{e}"))
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_else(|| panic!("not a string: {value}"))
}

fn number(value: &Value) -> Option<u64> {
    value.as_str().map(|t| t.parse().unwrap())
}

fn rules(namespace: &str, accept_unsigned: bool, skew: Option<Duration>) -> FenceRules {
    FenceRules {
        ring: Some(ring()),
        namespace: namespace.to_string(),
        accept_unsigned,
        lease_end_skew: skew,
    }
}

fn fence_headers(fence: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("holdfast-fence", HeaderValue::from_str(fence).unwrap());
    headers
}

/// Every case of signed-fence.json and fencing.json's parse table; the failures, in words.
fn run(imp: &dyn Implementation) -> Vec<String> {
    let file = vectors();
    let ring = ring();
    let mut failures = Vec::new();
    let mut fail = |section: &str, case: &Value, what: String| {
        failures.push(format!(
            "{section} \"{}\": {what}",
            case["name"].as_str().unwrap_or("?")
        ))
    };

    for case in file["verify"].as_array().unwrap() {
        let got = imp.verify(&ring, text(&case["fence"]));
        match (&got, case.get("error")) {
            (Ok(fence), None) => {
                let want = &case["expect"];
                let seen = (
                    fence.key_id.as_str(),
                    fence.namespace.as_str(),
                    fence.lock.as_str(),
                    fence.token,
                    fence.lease_end_ms,
                );
                let wanted = (
                    text(&want["keyId"]),
                    text(&want["namespace"]),
                    text(&want["lock"]),
                    number(&want["token"]).unwrap(),
                    number(&want["leaseEndMs"]),
                );
                if seen != wanted {
                    fail("verify", case, format!("read {seen:?}, want {wanted:?}"));
                }
            }
            (Err(kind), Some(error)) if *kind == text(error) => {}
            _ => fail(
                "verify",
                case,
                format!("got {:?}, want {}", got.map(|_| "a fence"), case["error"]),
            ),
        }
    }

    for case in file["bind"].as_array().unwrap() {
        let rules = rules(text(&case["namespace"]), false, None);
        let got = imp.admit(
            &rules,
            &fence_headers(text(&case["fence"])),
            Some(text(&case["lock"])),
            now_ms(),
        );
        let kind = got.as_ref().err().map(|r| match r {
            Refusal::AnotherLock { .. } => "wrong_lock",
            Refusal::AnotherNamespace { .. } => "wrong_namespace",
            other => other.error(),
        });
        if kind != case["error"].as_str() {
            fail("bind", case, format!("got {kind:?}, want {}", case["error"]));
        }
    }

    for case in file["leaseEnd"].as_array().unwrap() {
        let fence = SignedFence::parse(text(&case["fence"])).unwrap();
        let skew = Duration::from_millis(number(&case["skewMs"]).unwrap());
        let rules = rules(&fence.namespace, false, Some(skew));
        let got = imp.admit(
            &rules,
            &fence_headers(text(&case["fence"])),
            Some(&fence.lock),
            number(&case["nowMs"]).unwrap(),
        );
        let admitted = case["admitted"].as_bool().unwrap();
        let refused_for_its_end = matches!(got, Err(Refusal::LeaseEnded { .. }));
        if got.is_ok() != admitted || (!admitted && !refused_for_its_end) {
            fail("leaseEnd", case, format!("got {got:?}, want admitted {admitted}"));
        }
    }

    for case in file["headers"].as_array().unwrap() {
        let mut headers = HeaderMap::new();
        for (field, values) in case["headers"].as_object().unwrap() {
            let name = match field.as_str() {
                "fence" => "holdfast-fence",
                "lock" => "holdfast-fence-lock",
                _ => "holdfast-fence-token",
            };
            for value in values.as_array().unwrap() {
                headers.append(
                    HeaderName::from_static(name),
                    HeaderValue::from_str(text(value)).unwrap(),
                );
            }
        }
        let rules = rules("default", case["acceptUnsigned"].as_bool().unwrap(), None);
        let got = imp.admit(&rules, &headers, Some("orders"), now_ms());
        let seen = match &got {
            Ok(fence) if fence.signed => "signed",
            Ok(_) => "unsigned",
            Err(Refusal::Malformed { .. }) => "malformed",
            Err(Refusal::Missing { .. }) => "missing",
            Err(Refusal::SignedRequired { .. }) => "signed_required",
            Err(other) => other.error(),
        };
        let want = case.get("expect").or(case.get("error")).map(text).unwrap();
        if seen != want {
            fail("headers", case, format!("got {seen}, want {want}"));
        }
    }

    let unsigned = FenceRules::default(); // no ring: fencing.json's unsigned convention
    for case in conformance("fencing.json")["parse"].as_array().unwrap() {
        let mut headers = HeaderMap::new();
        for (field, value) in case["headers"].as_object().unwrap() {
            headers.insert(
                HeaderName::from_bytes(format!("holdfast-fence-{field}").as_bytes()).unwrap(),
                HeaderValue::from_str(text(value)).unwrap(),
            );
        }
        let got = imp.admit(&unsigned, &headers, None, now_ms());
        match (&got, case.get("error")) {
            (Ok(fence), None) => {
                let want = (text(&case["expect"]["lock"]), number(&case["expect"]["token"]).unwrap());
                if (fence.lock.as_str(), fence.token) != want || fence.signed {
                    fail("parse", case, format!("read {fence:?}, want {want:?}"));
                }
            }
            (Err(Refusal::Missing { field, header }), Some(error))
            | (Err(Refusal::Malformed { field, header, .. }), Some(error))
                if got.as_ref().unwrap_err().error() == format!("{}_fence", text(error))
                    && *field == text(&case["field"])
                    && header.eq_ignore_ascii_case(&format!("holdfast-fence-{field}")) => {}
            _ => fail(
                "parse",
                case,
                format!("got {got:?}, want {} of {}", case["error"], case["field"]),
            ),
        }
    }
    failures
}

#[test]
fn the_crate_passes_every_vector() {
    let failures = run(&TheCrate);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn wrong_implementations_fail_the_vectors() {
    let wrong: [(&str, &dyn Implementation); 5] = [
        ("skips the signature", &SkipsTheSignature),
        ("matches the lock by prefix", &MatchesTheLockByPrefix),
        ("ignores the unsigned headers' disagreement", &IgnoresTheUnsignedHeaders),
        ("keeps the first of a header sent twice", &KeepsTheFirstOfTwo),
        ("reads tokens leniently", &LenientTokens),
    ];
    for (what, imp) in wrong {
        assert!(
            !run(imp).is_empty(),
            "an implementation that {what} passed every vector"
        );
    }
}

#[test]
fn keys_are_checked_on_load() {
    let file = vectors();
    for case in file["badKeys"].as_array().unwrap() {
        let kid = text(&case["jwk"]["kid"]);
        let err = KeyRing::from_jwks(&jwks_of(std::slice::from_ref(&case["jwk"]))).expect_err(text(&case["name"]));
        assert!(
            err.message.contains(kid),
            "{}: the error does not name key {kid}: {err}",
            case["name"]
        );
    }
    for jwk in file["keys"]["ring"]["keys"].as_array().unwrap() {
        let raw: [u8; 32] = base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, text(&jwk["x"]))
            .unwrap()
            .try_into()
            .unwrap();
        assert_eq!(key_id(&raw), text(&jwk["kid"]));
    }
    // From a file too, and the error of a missing one names it.
    let dir = TempDir::new("keys");
    let path = dir.0.join("fence-keys.json");
    std::fs::write(&path, ring_jwks()).unwrap();
    assert_eq!(KeyRing::from_file(&path).unwrap().key_ids(), [KEY_1, KEY_2]);
    let missing = KeyRing::from_file(dir.0.join("nope.json")).unwrap_err();
    assert!(
        missing.message.contains("nope.json") && missing.message.contains("no such file"),
        "{missing}"
    );
    assert!(
        KeyRing::from_jwks(r#"{"keys":[]}"#)
            .unwrap_err()
            .message
            .contains("no keys")
    );
}

#[test]
fn signing_with_the_seeds_gives_the_vectors() {
    for case in vectors()["sign"].as_array().unwrap() {
        let hex = text(&case["seed"]);
        let seed: Vec<u8> = (0..64)
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let key = ed25519_dalek::SigningKey::from_bytes(&seed.try_into().unwrap());
        let id = key_id(key.verifying_key().as_bytes());
        let end = number(&case["leaseEndMs"]);
        let fence = sign(
            &id,
            text(&case["namespace"]),
            text(&case["lock"]),
            number(&case["token"]).unwrap(),
            end,
        );
        assert_eq!(fence, text(&case["fence"]), "{}", case["name"]);
    }
}

/// fencing.json's decide cases on each store's real backend.
#[tokio::test]
async fn every_store_decides_as_the_table() {
    let table = conformance("fencing.json");
    for backend in Backend::all() {
        let store = backend.store().await;
        for (i, case) in table["decide"].as_array().unwrap().iter().enumerate() {
            let lock = format!("decide-{i}-{}", now_ms());
            if let Some(newest) = number(&case["newest"]) {
                assert!(store.check(&lock, newest).await.unwrap().accepted);
            }
            let decision = store.check(&lock, number(&case["token"]).unwrap()).await.unwrap();
            assert_eq!(
                decision.accepted,
                case["accepted"].as_bool().unwrap(),
                "{}: {}",
                backend.name(),
                case["name"]
            );
            assert_eq!(
                Some(decision.newest),
                number(&case["newestAfter"]),
                "{}: {}",
                backend.name(),
                case["name"]
            );
        }
    }
}
