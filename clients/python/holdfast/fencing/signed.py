"""Signed fences (clients/conformance/signed-fence.md): the string's syntax, key ids, and the key
ring a guard verifies them with.

    v1:<key_id>:<namespace>:<lock>:<token>:<lease_end_ms>:<signature>

The signature is Ed25519 over everything before the last ':' exactly as sent. Verification uses
pyca `cryptography` (the `signed` extra: pip install 'holdfast[signed]'), imported when a key ring
is built; parsing needs nothing beyond the standard library.
"""

import base64
import collections
import hashlib
import json
import re
import urllib.error
import urllib.request

from holdfast.fencing.refusals import BadFenceSignature, UnknownFenceKey
from holdfast.fencing.wire import HTTP_FENCE_HEADER, MAX_TOKEN, BadFence, percent_decode

MAX_LENGTH = 4096
_KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SIGNATURE = re.compile(r"[A-Za-z0-9_-]{86}")
_UINT = re.compile(r"0|[1-9][0-9]{0,19}")
_PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]*")

# A signed fence's parts once its syntax is good; `message` (the bytes signed) and `signature`
# (64 bytes) are what the ring verifies. Nothing here is trusted before that.
SignedFence = collections.namedtuple("SignedFence", ["key_id", "namespace", "lock", "token", "lease_end_ms", "message",
                                                     "signature"])


def _uint(raw):
    """The value of an unsigned decimal without sign or leading zeros, at most MAX_TOKEN; else None."""
    if _UINT.fullmatch(raw) and int(raw) <= MAX_TOKEN:
        return int(raw)
    return None


def _b64url(raw):
    """The bytes of canonical unpadded base64url `raw`, or None."""
    try:
        decoded = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
    except ValueError:
        return None
    return decoded if base64.urlsafe_b64encode(decoded).decode().rstrip("=") == raw else None


def parse_signed(text, header=HTTP_FENCE_HEADER):
    """The SignedFence in `text` (not yet verified); raises BadFence (malformed, naming `header`) for
    any break of the format's rules. The fence itself is never quoted in the error."""
    def malformed(why):
        return BadFence("malformed", "fence", header, why)

    if len(text) > MAX_LENGTH:
        raise malformed(f"is longer than {MAX_LENGTH} characters")
    if not _PRINTABLE_ASCII.fullmatch(text):
        raise malformed("must be printable ASCII")
    fields = text.split(":")
    if len(fields) != 7:
        raise malformed("must have 7 fields separated by ':' (v1:key_id:namespace:lock:token:lease_end_ms:signature)")
    version, key_id, namespace, lock, token, lease_end, signature = fields
    if version != "v1":
        raise malformed("has an unknown version (v1 is the only one)")
    if not _KEY_ID.fullmatch(key_id):
        raise malformed("has a key id that is not 1 to 64 characters of A-Z a-z 0-9 _ -")
    decoded = {}
    for what, raw in (("namespace", namespace), ("lock", lock)):
        try:
            decoded[what] = percent_decode(raw)
        except ValueError as why:
            raise malformed(f"has a {what} that {why}") from None
    token_value = _uint(token)
    if token_value is None or token_value == 0:
        raise malformed("has a token that is not an unsigned decimal integer from 1 to 18446744073709551615 "
                        "without leading zeros")
    lease_end_ms = None if lease_end == "" else _uint(lease_end)
    if lease_end != "" and lease_end_ms is None:
        raise malformed("has a lease end that is neither empty nor an unsigned decimal integer up to "
                        "18446744073709551615 without leading zeros")
    raw_signature = _b64url(signature) if _SIGNATURE.fullmatch(signature) else None
    if raw_signature is None:
        raise malformed("has a signature that is not 86 characters of canonical unpadded base64url")
    message = text[:text.rindex(":")].encode("ascii")
    return SignedFence(key_id, decoded["namespace"], decoded["lock"], token_value, lease_end_ms, message, raw_signature)


def key_id(public_key):
    """The id of a raw 32-byte Ed25519 public key: the first 16 characters of the unpadded
    base64url of its SHA-256 (every server sharing the key writes the same id)."""
    return base64.urlsafe_b64encode(hashlib.sha256(public_key).digest()).decode().rstrip("=")[:16]


class BadKeyRing(ValueError):
    """A JWK set that cannot be a guard's key ring; the message names the source and the key."""


def _ed25519():
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError:
        raise ImportError("verifying signed fences needs the cryptography package: "
                          "pip install 'holdfast[signed]'") from None
    return Ed25519PublicKey, InvalidSignature


def _load_key(jwk, number, source):
    """(kid, Ed25519PublicKey) of one JWK, checked as the format requires."""
    public_key_class, _ = _ed25519()
    name = f'key {number} ("{jwk.get("kid")}")' if isinstance(jwk, dict) and isinstance(jwk.get("kid"), str) else f"key {number}"

    def bad(why):
        return BadKeyRing(f"fence key ring from {source}: {name} {why}")

    if not isinstance(jwk, dict):
        raise bad("is not a JSON object")
    if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
        raise bad(f'is not an Ed25519 key (kty "{jwk.get("kty")}", crv "{jwk.get("crv")}"; '
                  'a fence key has kty "OKP" and crv "Ed25519")')
    raw = _b64url(jwk["x"]) if isinstance(jwk.get("x"), str) else None
    if raw is None or len(raw) != 32:
        raise bad('has an "x" that is not the base64url of 32 bytes')
    if jwk.get("kid") != key_id(raw):
        raise bad(f'has a "kid" that is not the id of its key ({key_id(raw)}, from "x")')
    return jwk["kid"], public_key_class.from_public_bytes(raw)


class KeyRing:
    """The public keys a guard accepts signed fences from, by key id. Immutable: to rotate, build
    a new ring (and a new guard) with the new key added or the old one removed.

        ring = KeyRing.from_url("http://holdfast:9090/fence-keys")   # the server's JWK set, fetched once
        ring = KeyRing.from_file("/etc/holdfast/fence-keys.json")
        ring = KeyRing.from_jwks('{"keys": [...]}')

    Every key is checked when the ring is built (OKP, Ed25519, 32 bytes, kid = the id computed from
    x): a bad one raises BadKeyRing naming it, and the guard does not start.
    """

    def __init__(self, keys, source="the given keys"):
        """`keys`: {key id: cryptography Ed25519PublicKey}; prefer the from_* constructors."""
        if not keys:
            raise BadKeyRing(f"fence key ring from {source}: it has no keys")
        self._keys = dict(keys)
        self._invalid_signature = _ed25519()[1]
        self.source = source

    @property
    def key_ids(self):
        return tuple(self._keys)

    @classmethod
    def from_jwks(cls, text, source="a JWK set string"):
        """The ring of a JWK set ({"keys": [...]}, RFC 7517/8037) given as text or bytes."""
        try:
            document = json.loads(text)
        except ValueError:
            raise BadKeyRing(f"fence key ring from {source}: it is not JSON") from None
        if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
            raise BadKeyRing(f'fence key ring from {source}: it is not a JWK set (an object with a "keys" list)')
        keys = dict(_load_key(jwk, number, source) for number, jwk in enumerate(document["keys"], 1))
        return cls(keys, source)

    @classmethod
    def from_file(cls, path):
        """The ring of the JWK set in the file at `path`."""
        try:
            with open(path, "rb") as file:
                text = file.read()
        except OSError as error:
            raise BadKeyRing(f"fence key ring from the file {path}: cannot read it ({error.strerror})") from None
        return cls.from_jwks(text, f"the file {path}")

    @classmethod
    def from_url(cls, url, timeout=10.0):
        """The ring of the JWK set served at `url` (the holdfast server's http://HOST:PORT/fence-keys),
        fetched once, now: a ring never changes after it is built."""
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            raise BadKeyRing(f"fence key ring from {url}: the server answered HTTP {error.code}") from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            why = getattr(reason, "strerror", None) or ("timed out" if isinstance(reason, TimeoutError) else "no answer")
            raise BadKeyRing(f"fence key ring from {url}: cannot fetch it ({why})") from None
        return cls.from_jwks(text, url)

    def verify(self, fence):
        """Raises UnknownFenceKey or BadFenceSignature unless a key of the ring signed `fence` (a SignedFence)."""
        key = self._keys.get(fence.key_id)
        if key is None:
            raise UnknownFenceKey(fence.key_id)
        try:
            key.verify(fence.signature, fence.message)
        except self._invalid_signature:
            raise BadFenceSignature(fence.key_id) from None
