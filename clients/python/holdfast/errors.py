"""The SDK's one error type for a call that failed, in words that say what is wrong and where.

DeadlockError, a HoldfastError, is a wait the server ended to break a deadlock (is_deadlock, the
one rule, clients/conformance/deadlock.json). gRPC reports a wrong address, a port that is not holdfast's gRPC listener or a TLS mismatch as
UNAVAILABLE with a detail string meant for gRPC's developers; these functions name the address and
the likely cause instead. HoldfastError is a grpc.RpcError (code() and details() as gRPC gave
them), so code written against grpc.RpcError keeps working.
"""

import contextlib
import re

import grpc

# (a pattern in gRPC's detail string, what it means): the first that matches is the cause.
_CAUSES = (
    (r"Connection refused", "connection refused: nothing listens there (is the holdfast server running, and is this "
                            "its --listen port?)"),
    (r"http1\.x server|Failed parsing HTTP/2", "it answers HTTP/1, not gRPC: this is likely the holdfast server's "
                                               "--http-listen port (dashboard, /metrics); give its --listen port"),
    (r"(?i)wrong[ _]version[ _]number", "TLS mismatch: this channel uses TLS and the server there answers in plaintext (drop "
                              "ca=/tls=, or start the server with --tls-cert and --tls-key)"),
    (r"Socket closed", "the server closed the connection at once: likely a TLS mismatch (the server expects TLS and "
                       "this channel is plaintext: pass ca=..., or tls=True for the system's CAs)"),
    (r"certificate required|Endpoint read failed", "the server ended the TLS handshake: it likely requires a client "
                                                   "certificate (pass cert= and key=) that this channel did not give"),
    (r"certificate verify failed", "TLS: the server's certificate is not signed by the CA given (ca=), or does not "
                                   "name this host (see server_name=)"),
    (r"DNS resolution failed", "the host name does not resolve"),
)
# Newer grpcio reports a channel's target with the default scheme it resolved it by put in front.
_DEFAULT_SCHEME = "dns:///"
_SCHEME = re.compile(r"^(https?|grpcs?|tcp)://", re.IGNORECASE)
_PORT = re.compile(r"(^\[[^\]]*\]|^[^:\[\]]*):(\d{1,5})$")
# What a unary call or stream ended by a deadlock carries in its trailing metadata, and how its
# message (the only sign on a session operation's error) starts (docs/deadlocks.md).
DEADLOCK_REASON = ("holdfast-reason", "deadlock")
DEADLOCK_PREFIX = "deadlock: "


class HoldfastError(grpc.RpcError):
    """A holdfast call failed: `addr` is the server address, `cause` what went wrong, in words."""

    def __init__(self, addr, cause, code=None, details=None):
        self.addr, self.cause = addr, cause
        self._code, self._details = code, details
        where = f"holdfast at {addr}" if addr else "holdfast server"
        status = f"{code.name}: " if code is not None else ""
        super().__init__(f"{where}: {status}{cause}")

    def code(self):
        """The grpc.StatusCode (None for an address refused before any call)."""
        return self._code

    def details(self):
        """gRPC's own detail string."""
        return self._details


class DeadlockError(HoldfastError):
    """The server ended this call's wait to break a deadlock (docs/deadlocks.md): give back what you
    hold, pause a short random while, and try again. details() is the server's message unchanged,
    naming the cycle (each lock, its holder's owner, what that owner waits for); `lock_name` is the
    lock the call waited for (None when the SDK does not know it). code() is ABORTED."""

    def __init__(self, addr, lock_name, code, details):
        self.lock_name = lock_name
        super().__init__(addr, f'lock "{lock_name}": {details}' if lock_name else details, code, details)


def is_deadlock(code, metadata, message):
    """Whether an error with this grpc.StatusCode, trailing metadata ((key, value) pairs) and message
    is a deadlock: ABORTED, and holdfast-reason: deadlock or a message starting "deadlock: ". A lost
    lease is ABORTED too, and is not one."""
    if code != grpc.StatusCode.ABORTED:
        return False
    return any(tuple(pair) == DEADLOCK_REASON for pair in metadata) or message.startswith(DEADLOCK_PREFIX)


def _trailing_metadata(error):
    """A failed call's trailing metadata as (key, value) pairs; none for an error that has none."""
    read = getattr(error, "trailing_metadata", None)
    try:
        return tuple(read() or ()) if callable(read) else ()
    except Exception:  # noqa: BLE001 - an error object without it: the message decides
        return ()


def address_problem(addr):
    """What is wrong with a host:port address, in words, or None."""
    if _SCHEME.match(addr):
        return ("the address has a URL scheme: give host:port (gRPC is not an http:// URL), e.g. "
                f"{_SCHEME.sub('', addr).rstrip('/')}")
    if addr.startswith(("unix:", "dns:", "ipv4:", "ipv6:")):
        return None  # gRPC's own target schemes
    if not _PORT.match(addr):
        return "the address has no port: give host:port, with the server's --listen port"
    return None


def check_address(addr):
    """Raises HoldfastError when `addr` cannot be a holdfast server's gRPC address."""
    problem = address_problem(addr)
    if problem:
        raise HoldfastError(addr, problem)


def remember_address(channel, addr):
    """Marks a channel made by holdfast.channel with its address, for the errors of calls on it."""
    channel._holdfast_addr = addr
    return channel


def address_of(channel):
    """The address a channel was made for, when it can be told (a grpc.aio channel built by hand cannot)."""
    seen = 0
    while channel is not None and seen < 4:
        addr = getattr(channel, "_holdfast_addr", None)
        if addr:
            return addr
        target = getattr(channel, "target", None)
        if callable(target):
            try:
                value = target()
                value = value.decode() if isinstance(value, bytes) else str(value)
                return value[len(_DEFAULT_SCHEME):] if value.startswith(_DEFAULT_SCHEME) else value
            except Exception:  # noqa: BLE001 - only a nicer message depends on it
                return None
        channel, seen = getattr(channel, "_channel", None), seen + 1
    return None


def translate(error, addr, lock_name=None):
    """The HoldfastError for a grpc.RpcError from a call to `addr` (a HoldfastError is returned as it
    is): a DeadlockError, naming `lock_name`, when is_deadlock says so."""
    if isinstance(error, HoldfastError) or not hasattr(error, "code"):
        return error
    code, details = error.code(), error.details() or ""
    if is_deadlock(code, _trailing_metadata(error), details):
        deadlock = DeadlockError(addr, lock_name, code, details)
        deadlock.__cause__ = error
        return deadlock
    problem = address_problem(addr) if addr else None
    if problem is None:
        problem = next((cause for pattern, cause in _CAUSES if re.search(pattern, details)), None)
    if problem is None and code == grpc.StatusCode.DEADLINE_EXCEEDED:
        problem = "no answer before the call's deadline"
    translated = HoldfastError(addr, problem or details or "the call failed", code, details)
    translated.__cause__ = error
    return translated


@contextlib.contextmanager
def translated(channel, lock_name=None):
    """Raises the HoldfastError for any grpc.RpcError raised inside (a call for `lock_name`)."""
    try:
        yield
    except HoldfastError:
        raise
    except grpc.RpcError as error:
        raise translate(error, address_of(channel), lock_name) from error
