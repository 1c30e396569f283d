"""One Session stream's state (docs/sessions.md): its outgoing queue, the operations in flight by
op_id, the leases it holds by the op_id of their hold, its deadline anchors and its ping.

holdfast.session_core changes all of it (under the threaded Session's lock); this module keeps no
lock itself. Stream feeds a grpc channel from a queue, AsyncStream a grpc.aio one.
"""

import asyncio
import queue
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


def op_error(addr, code, message, lock_name=None):
    """The HoldfastError the unary RPC raises for the status an operation's OpError carries (no
    metadata: a deadlock is told by its message's prefix)."""
    return translate(_Status(_CODES.get(code, grpc.StatusCode.UNKNOWN), message), addr, lock_name)


def ended_error(addr, cause, code):
    """What an operation in flight raises when its stream ends before its answer."""
    return HoldfastError(addr, f"the session ended before this operation was answered ({cause}); it may or may not "
                               "have taken effect", code, cause)


class Pending:
    """One operation in flight: its answer (a response message or a built lease) or its error."""

    __slots__ = ("request", "done", "response", "error", "abandoned")

    def __init__(self, request, done):
        self.request = request  # the operation's own message (an AcquireRequest, a HoldRequest, ...)
        self.done = done  # a threading.Event or an asyncio.Event, set with the answer
        self.response = None
        self.error = None
        self.abandoned = False  # its caller stopped waiting: a grant that comes anyway is given back

    def settle(self, response=None, error=None):
        self.response, self.error = response, error
        self.done.set()


class Stream:
    """One open Session call. `opened_at` (time.monotonic(), read just before the call started) is
    the first anchor: every lease time of the stream counts from when the server received it."""

    _new_queue = queue.SimpleQueue

    def __init__(self, stub, ping_interval_s):
        self._outgoing = self._new_queue()
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
        self.tasks = []  # the reader's and the keeper's thread (or asyncio task)

    def send(self, op_id, **operation):
        """Queues one SessionRequest (nothing once the stream has ended)."""
        if not self.ended:
            self._outgoing.put_nowait(lock_pb2.SessionRequest(op_id=op_id, **operation))

    def half_close(self):
        """Ends the request side after what is queued; also frees gRPC's thread reading the queue."""
        self._outgoing.put_nowait(_HALF_CLOSE)

    def _requests(self):
        while True:
            request = self._outgoing.get()
            if request is _HALF_CLOSE:
                return
            yield request


class AsyncStream(Stream):
    """A Stream on a grpc.aio channel (created inside the running event loop)."""

    _new_queue = asyncio.Queue

    def __init__(self, stub, ping_interval_s):
        super().__init__(stub, ping_interval_s)
        self.moved = asyncio.Event()  # the keeper looks again when it is set

    async def _requests(self):
        while True:
            request = await self._outgoing.get()
            if request is _HALF_CLOSE:
                return
            yield request
