"""How a fence travels with a request: the lock's name and its fencing token, in two HTTP headers
or two gRPC metadata keys (clients/conformance/fencing.json is the source of truth).

The name is percent-encoded as JavaScript's encodeURIComponent writes it (so any name fits in a
header); the token is an unsigned decimal uint64 without leading zeros.
"""

import collections
import re
import urllib.parse

HTTP_LOCK_HEADER = "Holdfast-Fence-Lock"
HTTP_TOKEN_HEADER = "Holdfast-Fence-Token"
GRPC_LOCK_KEY = "holdfast-fence-lock"
GRPC_TOKEN_KEY = "holdfast-fence-token"
MAX_TOKEN = 2**64 - 1

# encodeURIComponent leaves A-Z a-z 0-9 and - _ . ! ~ * ' ( ) as they are.
_URI_COMPONENT_SAFE = "-_.!~*'()"
_TOKEN = re.compile(r"0|[1-9][0-9]{0,19}")
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")

Fence = collections.namedtuple("Fence", ["lock", "token"])


class BadFence(ValueError):
    """A request's fence is missing or malformed. `kind` is "missing" or "malformed", `field` is
    "lock" or "token", `header` the header (or metadata key) it names."""

    def __init__(self, kind, field, header, why=""):
        self.kind, self.field, self.header = kind, field, header
        super().__init__(f"{kind} fence: {header} {why or 'is missing'}".rstrip())


def encode_lock(lock):
    return urllib.parse.quote(lock, safe=_URI_COMPONENT_SAFE, encoding="utf-8")


def encode_token(token):
    token = int(token)
    if not 0 <= token <= MAX_TOKEN:
        raise ValueError(f"fencing token {token} is not a uint64")
    return str(token)


def http_headers(lock, token):
    """{Holdfast-Fence-Lock: ..., Holdfast-Fence-Token: ...} for this lock and token."""
    return {HTTP_LOCK_HEADER: encode_lock(lock), HTTP_TOKEN_HEADER: encode_token(token)}


def grpc_metadata(lock, token):
    """[(holdfast-fence-lock, ...), (holdfast-fence-token, ...)] for this lock and token."""
    return [(GRPC_LOCK_KEY, encode_lock(lock)), (GRPC_TOKEN_KEY, encode_token(token))]


def _decode_lock(raw, header):
    if raw == "":
        raise BadFence("malformed", "lock", header, "is empty")
    if _PERCENT.search(raw):
        raise BadFence("malformed", "lock", header, "has a % that does not start a percent-encoded byte")
    try:
        return urllib.parse.unquote(raw, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise BadFence("malformed", "lock", header, "is percent-encoded but not UTF-8") from None


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


def _once(pairs, lock_key, token_key, lock_header, token_header):
    """The raw (lock, token) among (key, value) pairs, None where absent; raises BadFence when
    either is sent twice (two fences in one request are malformed)."""
    found = {}
    for key, value in pairs:
        if key in (lock_key, token_key):
            if key in found:
                field, header = ("lock", lock_header) if key == lock_key else ("token", token_header)
                raise BadFence("malformed", field, header, "must be sent once")
            found[key] = value
    return found.get(lock_key), found.get(token_key)


def parse_grpc(metadata):
    """The Fence in gRPC invocation metadata (pairs of key, value); raises BadFence, also for a key
    sent twice."""
    pairs = ((key, value.decode() if isinstance(value, bytes) else value) for key, value in metadata or ())
    lock, token = _once(pairs, GRPC_LOCK_KEY, GRPC_TOKEN_KEY, GRPC_LOCK_KEY, GRPC_TOKEN_KEY)
    return parse(lock, token, GRPC_LOCK_KEY, GRPC_TOKEN_KEY)


def parse_wsgi(environ):
    """The Fence in a WSGI environ; raises BadFence. (The server joins a header sent twice into one
    value with a comma, which no token matches.)"""
    return parse(environ.get("HTTP_HOLDFAST_FENCE_LOCK"), environ.get("HTTP_HOLDFAST_FENCE_TOKEN"))


def parse_asgi(headers):
    """The Fence in an ASGI scope's headers (lower-case byte names); raises BadFence, also for a
    header sent twice."""
    pairs = ((name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in headers)
    lock, token = _once(pairs, HTTP_LOCK_HEADER.lower(), HTTP_TOKEN_HEADER.lower(), HTTP_LOCK_HEADER, HTTP_TOKEN_HEADER)
    return parse(lock, token)
