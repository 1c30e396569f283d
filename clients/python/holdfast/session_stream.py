"""One Session stream's state (docs/sessions.md): its outgoing queue, the operations in flight by
op_id, the leases it holds by the op_id of their hold, its deadline anchors and its ping.

holdfast.sessions.Session changes all of it under its one lock; this module keeps no lock itself.
"""

import queue
import threading
import time

import grpc

from holdfast.errors import HoldfastError, translate
from holdfast.session_deadline import Anchors
from holdfast.v1 import lock_pb2

_CODES = {code.value[0]: code for code in grpc.StatusCode}
_HALF_CLOSE = object()


class _Status(grpc.RpcError):
    """A status code and message, as a unary call's error carries them."""

    def __init__(self, code, details):
        super().__init__(details)
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


def op_error(addr, code, message):
    """The HoldfastError the unary RPC raises for the status an operation's OpError carries."""
    return translate(_Status(_CODES.get(code, grpc.StatusCode.UNKNOWN), message), addr)


def ended_error(addr, cause, code):
    """What an operation in flight raises when its stream ends before its answer."""
    return HoldfastError(addr, f"the session ended before this operation was answered ({cause}); it may or may not "
                               "have taken effect", code, cause)


class Pending:
    """One operation in flight: its answer (a response message or a built lease) or its error."""

    __slots__ = ("request", "done", "response", "error", "abandoned")

    def __init__(self, request):
        self.request = request  # the operation's own message (an AcquireRequest, a HoldRequest, ...)
        self.done = threading.Event()
        self.response = None
        self.error = None
        self.abandoned = False  # its caller stopped waiting: a grant that comes anyway is given back

    def settle(self, response=None, error=None):
        self.response, self.error = response, error
        self.done.set()


class Stream:
    """One open Session call. `opened_at` (time.monotonic(), read just before the call started) is
    the first anchor: every lease time of the stream counts from when the server received it."""

    def __init__(self, stub, ping_interval_s):
        self._outgoing = queue.SimpleQueue()
        self.anchors = Anchors(time.monotonic())
        self.call = stub.Session(self._requests())
        self.pending = {}  # op_id -> Pending
        self.holds = {}  # op_id of the hold -> its SessionLease
        self.ended = False
        self.closing = False  # close() was sent: its leases end released, not lost
        self.ping = None  # (op_id, sent_at) of the ping whose pong is awaited
        self.next_ping_at = self.anchors.opened_at + ping_interval_s
        self.renewed_messages = 0
        self.pongs = 0
        self.last_renewed = None
        self.threads = []

    def send(self, op_id, **operation):
        """Queues one SessionRequest (nothing once the stream has ended)."""
        if not self.ended:
            self._outgoing.put(lock_pb2.SessionRequest(op_id=op_id, **operation))

    def half_close(self):
        """Ends the request side after what is queued; also frees gRPC's thread reading the queue."""
        self._outgoing.put(_HALF_CLOSE)

    def _requests(self):
        while True:
            request = self._outgoing.get()
            if request is _HALF_CLOSE:
                return
            yield request
