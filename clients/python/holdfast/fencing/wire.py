"""How a fence travels with a request: the lock's name and its fencing token, in two HTTP headers
or two gRPC metadata keys (clients/conformance/fencing.json is the source of truth), and beside
them, when the server signs fences, the signed fence in one more (clients/conformance/signed-fence.md).

The name is percent-encoded as JavaScript's encodeURIComponent writes it (so any name fits in a
header); the token is an unsigned decimal uint64 without leading zeros.
"""

import collections
import re
import urllib.parse

from holdfast.fencing.refusals import FenceRefused

HTTP_FENCE_HEADER = "Holdfast-Fence"
HTTP_LOCK_HEADER = "Holdfast-Fence-Lock"
HTTP_TOKEN_HEADER = "Holdfast-Fence-Token"
GRPC_FENCE_KEY = "holdfast-fence"
GRPC_LOCK_KEY = "holdfast-fence-lock"
GRPC_TOKEN_KEY = "holdfast-fence-token"
# The names each transport gives the three fields: the signed fence, the lock and the token.
HTTP_NAMES = {"fence": HTTP_FENCE_HEADER, "lock": HTTP_LOCK_HEADER, "token": HTTP_TOKEN_HEADER}
GRPC_NAMES = {"fence": GRPC_FENCE_KEY, "lock": GRPC_LOCK_KEY, "token": GRPC_TOKEN_KEY}
MAX_TOKEN = 2**64 - 1

# encodeURIComponent leaves A-Z a-z 0-9 and - _ . ! ~ * ' ( ) as they are.
_URI_COMPONENT_SAFE = "-_.!~*'()"
_TOKEN = re.compile(r"0|[1-9][0-9]{0,19}")
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")

# What a handler reads of an admitted request (signed-fence.md, "What a handler reads"): the lock
# and token; for a signed fence also its namespace, lease end (Unix ms, None when it states none)
# and key id, and signed=True. An unsigned fence has namespace "" and key_id "", no lease end.
Fence = collections.namedtuple("Fence", ["lock", "token", "namespace", "lease_end_ms", "key_id", "signed"],
                               defaults=("", None, "", False))


class BadFence(FenceRefused, ValueError):
    """A request's fence is missing or malformed. `kind` is "missing" or "malformed", `field` is
    "fence", "lock" or "token", `header` the header (or metadata key) it names."""

    status, grpc_code = 400, "INVALID_ARGUMENT"

    def __init__(self, kind, field, header, why=""):
        self.kind, self.field, self.header = kind, field, header
        self.error = f"{kind}_fence"
        message = f"missing fence: header {header} is required" if kind == "missing" else f"{kind} fence: {header} {why}"
        super().__init__(message, field=field, header=header)


def encode_lock(lock):
    return urllib.parse.quote(lock, safe=_URI_COMPONENT_SAFE, encoding="utf-8")


def encode_token(token):
    token = int(token)
    if not 0 <= token <= MAX_TOKEN:
        raise ValueError(f"fencing token {token} is not a uint64")
    return str(token)


def http_headers(lock, token, signed_fence=""):
    """{Holdfast-Fence-Lock: ..., Holdfast-Fence-Token: ...} for this lock and token, and
    Holdfast-Fence when the grant came with a signed fence (AcquireResponse.signed_fence ...)."""
    headers = {HTTP_FENCE_HEADER: signed_fence} if signed_fence else {}
    headers.update({HTTP_LOCK_HEADER: encode_lock(lock), HTTP_TOKEN_HEADER: encode_token(token)})
    return headers


def grpc_metadata(lock, token, signed_fence=""):
    """[(holdfast-fence-lock, ...), (holdfast-fence-token, ...)] for this lock and token, and
    (holdfast-fence, ...) first when the grant came with a signed fence."""
    signed = [(GRPC_FENCE_KEY, signed_fence)] if signed_fence else []
    return [*signed, (GRPC_LOCK_KEY, encode_lock(lock)), (GRPC_TOKEN_KEY, encode_token(token))]


def percent_decode(raw):
    """The text `raw` percent-encodes; raises ValueError saying what is wrong (empty, a stray %, not UTF-8)."""
    if raw == "":
        raise ValueError("is empty")
    if _PERCENT.search(raw):
        raise ValueError("has a % that does not start a percent-encoded byte")
    try:
        return urllib.parse.unquote(raw, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise ValueError("is percent-encoded but not UTF-8") from None


def _decode_lock(raw, header):
    try:
        return percent_decode(raw)
    except ValueError as why:
        raise BadFence("malformed", "lock", header, str(why)) from None


def _decode_token(raw, header):
    if not _TOKEN.fullmatch(raw) or int(raw) > MAX_TOKEN:
        raise BadFence("malformed", "token", header,
                       "must be an unsigned decimal integer up to 18446744073709551615 without leading zeros")
    return int(raw)


def parse(lock, token, lock_header=HTTP_LOCK_HEADER, token_header=HTTP_TOKEN_HEADER):
    """The Fence in a request's two raw values (None when absent); raises BadFence naming the header.

    The token is checked first: a request with no fence at all is reported as missing its token.
    """
    if token is None:
        raise BadFence("missing", "token", token_header)
    if lock is None:
        raise BadFence("missing", "lock", lock_header)
    parsed_token = _decode_token(token, token_header)
    return Fence(_decode_lock(lock, lock_header), parsed_token)


def _collect(pairs, names):
    """{"fence": [...], "lock": [...], "token": [...]}: every value of each of the three among
    (key, value) pairs whose keys are compared as given. A value with a comma counts as two: that is
    how a header sent twice reaches a WSGI app, and how proxies and some gRPC stacks pass it on (no
    fence, lock or token contains one: encodeURIComponent writes %2C)."""
    wanted = {name: field for field, name in names.items()}
    found = {field: [] for field in names}
    for key, value in pairs:
        field = wanted.get(key)
        if field is not None:
            found[field].extend(value.split(","))
    return found


def collect_grpc(metadata):
    """The fence fields' values in gRPC invocation metadata (pairs of key, value)."""
    pairs = ((key, value.decode("latin-1") if isinstance(value, bytes) else value) for key, value in metadata or ())
    return _collect(pairs, GRPC_NAMES)


def collect_asgi(headers):
    """The fence fields' values in an ASGI scope's headers (byte names, any case)."""
    pairs = ((name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in headers)
    return _collect(pairs, {field: name.lower() for field, name in HTTP_NAMES.items()})


def collect_wsgi(environ):
    """The fence fields' values in a WSGI environ (whose server joins a header sent twice with a comma)."""
    keys = {field: "HTTP_" + name.upper().replace("-", "_") for field, name in HTTP_NAMES.items()}
    return _collect(((key, environ[key]) for key in keys.values() if key in environ), keys)


def once(raw, names):
    """(fence, lock, token): the one value of each (None when absent); raises BadFence when one
    was sent twice (two fences in one request are malformed, whichever of them would pass)."""
    for field in ("fence", "lock", "token"):
        if len(raw.get(field, ())) > 1:
            raise BadFence("malformed", field, names[field], "must be sent once")
    return tuple((raw.get(field) or [None])[0] for field in ("fence", "lock", "token"))


def _parse_unsigned(raw, names):
    _, lock, token = once(raw, names)
    return parse(lock, token, names["lock"], names["token"])


def parse_grpc(metadata):
    """The unsigned Fence in gRPC invocation metadata (pairs of key, value); raises BadFence, also
    for a key sent twice. (The guards read signed fences too: holdfast.fencing.FenceGuard.)"""
    return _parse_unsigned(collect_grpc(metadata), GRPC_NAMES)


def parse_wsgi(environ):
    """The unsigned Fence in a WSGI environ; raises BadFence, also for a header sent twice."""
    return _parse_unsigned(collect_wsgi(environ), HTTP_NAMES)


def parse_asgi(headers):
    """The unsigned Fence in an ASGI scope's headers (lower-case byte names); raises BadFence, also
    for a header sent twice."""
    return _parse_unsigned(collect_asgi(headers), HTTP_NAMES)
