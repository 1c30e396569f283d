"""Signed fences for the tests, made with the RFC 8032 test seeds of clients/conformance/signed-fence.json
(never used outside tests): a fence signer (checked against the file's `sign` vectors) and JWK sets."""

import base64
import json

import support

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from holdfast import fencing
from holdfast.fencing import wire

VECTORS = json.loads((support.REPO_ROOT / "clients" / "conformance" / "signed-fence.json").read_text(encoding="utf-8"))
RING_SEED, SECOND_SEED, OUTSIDER_SEED = VECTORS["keys"]["seeds"].values()


def _b64url(raw):
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _public(seed):
    key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(seed))
    return key, key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def kid(seed):
    return fencing.key_id(_public(seed)[1])


def sign_fence(seed, lock, token, lease_end_ms=None, namespace="default", key_id=None):
    """The signed fence the server would write for this grant, signed with `seed`'s key (under
    `key_id`, default the key's own id)."""
    key, public = _public(seed)
    body = ":".join(["v1", key_id or fencing.key_id(public), wire.encode_lock(namespace), wire.encode_lock(lock),
                     str(token), "" if lease_end_ms is None else str(lease_end_ms)])
    return f"{body}:{_b64url(key.sign(body.encode()))}"


def jwk(seed):
    public = _public(seed)[1]
    return {"kty": "OKP", "crv": "Ed25519", "kid": fencing.key_id(public), "x": _b64url(public), "alg": "EdDSA", "use": "sig"}


def jwks(*seeds):
    """A JWK set (text) of these seeds' public keys."""
    return json.dumps({"keys": [jwk(seed) for seed in seeds]})


def ring(*seeds):
    return fencing.KeyRing.from_jwks(jwks(*seeds))
