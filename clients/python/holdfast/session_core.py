"""What a session does with each message, each tick of its clock and each end, with no I/O of its own.

holdfast.sessions.Session (threads) and holdfast.aio_sessions.AsyncSession (asyncio) drive it:
they open the stream, read it, wait, and call these methods (the threaded one under its lock).
"""

import collections
import contextlib
import itertools
import math
import time

import grpc

from holdfast.errors import HoldfastError, address_of, translate
from holdfast.lease import PAST_DEADLINE, LeaseLost, NotAcquired, deadline_passed
from holdfast.session_stream import Pending, ended_error, op_error
from holdfast.v1 import lock_pb2, lock_pb2_grpc

# How long an operation may wait for its answer (plus a hold's wait_ms), and a ping for its pong.
CALL_TIMEOUT_S = 10.0
# How often a session that holds locks pings: the pong re-anchors the deadlines and proves the
# stream is alive.
PING_INTERVAL_S = 60.0
_UNSPECIFIED = lock_pb2.LOST_REASON_UNSPECIFIED

SessionStats = collections.namedtuple("SessionStats", (
    "opened_at",  # time.monotonic() just before the current stream started
    "anchors",  # ((sent_at, received_after_ms), ...): the open and the kept pongs
    "locks",  # leases held under the stream
    "renewed_messages",  # `renewed` messages received: about one per renewal tick, however many locks
    "pongs",  # pongs received
    "last_renewed",  # the latest SessionRenewed, or None
))


class SessionClosed(Exception):
    """The Session was closed: open a new one."""


@contextlib.contextmanager
def not_acquired_in_time(name, wait_ms):
    """Raises NotAcquired for a hold the server did not grant in time (DEADLINE_EXCEEDED), as `lock` does."""
    try:
        yield
    except HoldfastError as error:
        if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            raise NotAcquired(f'lock "{name}" was not acquired within {wait_ms} ms') from error
        raise


class SessionCore:
    """The state every session keeps; subclasses set `_lock`, `_lease_class`, `_new_event`, `_wake`."""

    def __init__(self, channel, timeout_s, ping_interval_s):
        self.addr = address_of(channel)
        self._stub = lock_pb2_grpc.LockServiceStub(channel)
        self._timeout_s, self._ping_interval_s = timeout_s, ping_interval_s
        self._stream = None
        self._closed = False
        self._op_ids = itertools.count(1)

    def stats(self):
        """What the current stream has seen (SessionStats), or None before the first operation."""
        with self._lock:
            stream = self._stream
            if stream is None:
                return None
            return SessionStats(stream.anchors.opened_at, stream.anchors.all(), len(stream.holds),
                                stream.renewed_messages, stream.pongs, stream.last_renewed)

    def _current(self):
        """The open stream, or None when a new one is needed; raises SessionClosed after close()."""
        if self._closed:
            raise SessionClosed(f"the session with holdfast at {self.addr} is closed: open a new one")
        return self._stream if self._stream is not None and not self._stream.ended else None

    def _start(self, stream, kind, request):
        """Sends one operation; returns (op_id, its Pending)."""
        if stream.ended:
            raise ended_error(self.addr, "before this operation was sent", grpc.StatusCode.UNAVAILABLE)
        op_id = next(self._op_ids)
        pending = stream.pending[op_id] = Pending(request, self._new_event())
        stream.send(op_id, **{kind: request})
        return op_id, pending

    def _abandon(self, stream, op_id, pending):
        """Its caller stops waiting: the operation is cancelled, and a grant that comes anyway given back."""
        if not pending.done.is_set():
            pending.abandoned = True
            stream.send(next(self._op_ids), cancel=op_id)

    def _timed_out(self, timeout_s):
        return HoldfastError(self.addr, f"no answer on the session within {timeout_s:g} s",
                             grpc.StatusCode.DEADLINE_EXCEEDED)

    @staticmethod
    def _outcome(pending):
        if pending.error is not None:
            raise pending.error
        return pending.response

    @staticmethod
    def _granted(lease):
        """The lease of a hold, unless its grant came too late (it was given back then)."""
        if lease.lost.is_set():
            raise LeaseLost(f'lock "{lease.name}": {lease.lost_reason}')
        return lease

    def _take_back(self, lease):
        """The stream to release a lease's hold on, or None when there is nothing to give back."""
        stream = lease._stream
        if stream.ended or stream.holds.pop(lease._op_id, None) is None:
            return None
        return stream

    def _begin_close(self):
        """Sends close and half-closes; returns the stream whose end is then awaited, or None."""
        if self._closed:
            return None
        self._closed = True
        stream, self._stream = self._stream, None
        if stream is None or stream.ended:
            return None
        stream.closing = True
        for lease in stream.holds.values():
            lease._closing = True  # released when the stream ends, not lost
        stream.send(next(self._op_ids), close=lock_pb2.SessionClose())
        stream.half_close()
        self._wake(stream)
        return stream

    def _send_release(self, stream, name, token, hold_id=""):
        """Gives back a grant nobody will use, without waiting for the answer."""
        op_id = next(self._op_ids)
        pending = stream.pending[op_id] = Pending(None, self._new_event())
        pending.abandoned = True
        stream.send(op_id, release=lock_pb2.ReleaseRequest(name=name, token=token, hold_id=hold_id))

    def _on_message(self, stream, response):
        kind = response.WhichOneof("result")
        if kind == "renewed":
            self._renewed(stream, response.renewed)
        elif kind == "lost":
            lease = stream.holds.pop(response.op_id, None)
            if lease is not None:
                lease._lose(response.lost.reason, response.lost.code)
        elif kind == "pong":
            if stream.ping is not None and stream.ping[0] == response.op_id:
                stream.anchors.add_pong(stream.ping[1], response.pong.received_after_ms)
                stream.ping, stream.pongs = None, stream.pongs + 1
                self._wake(stream)
        else:
            self._answered(stream, response, kind)

    def _renewed(self, stream, renewed):
        stream.renewed_messages += 1
        stream.last_renewed = renewed
        deadline = stream.anchors.deadline(renewed.lease_started_after_ms, renewed.ttl_ms)
        for op_id, lease in list(stream.holds.items()):
            lost = lease._confirm(deadline, "a renewal")
            if lost:
                self._drop(stream, op_id, lost)
        self._wake(stream)

    def _answered(self, stream, response, kind):
        pending = stream.pending.pop(response.op_id, None)
        if pending is None:
            return
        if pending.abandoned:  # its caller gave up: a grant that came anyway is given back
            grant = response.hold if kind == "hold" else response.acquire if kind == "acquire" else None
            if grant is not None and (kind == "hold" or grant.acquired):
                self._send_release(stream, pending.request.name, grant.token, getattr(grant, "hold_id", ""))
        elif kind == "error":
            lock_name = getattr(pending.request, "name", None)
            pending.settle(error=op_error(self.addr, response.error.code, response.error.message, lock_name))
        elif kind == "hold":
            pending.settle(self._held(stream, response.op_id, pending.request, response.hold))
        else:
            pending.settle(getattr(response, kind))

    def _held(self, stream, op_id, request, grant):
        """The lease for a hold's grant, registered before any later message is read."""
        lease = self._lease_class(self, stream, op_id, request, grant)
        stream.holds[op_id] = lease
        lost = lease._confirm(stream.anchors.deadline(grant.lease_started_after_ms, grant.ttl_ms), "the grant")
        if lost:
            self._drop(stream, op_id, lost)
        self._wake(stream)
        return lease

    def _drop(self, stream, op_id, lost):
        """A lease lost on this side: reported, and its hold given back if the server still keeps it."""
        lease = stream.holds.pop(op_id)
        lease._lose(*lost)
        self._send_release(stream, lease.name, lease.token, lease.hold_id)

    def _keep_step(self, stream, now):
        """Marks leases lost at their deadline, pings, cuts off a stream whose pong is overdue. Returns
        when to look again (math.inf: at the next event), or None once the stream has ended."""
        for op_id, lease in list(stream.holds.items()):
            if deadline_passed(lease._deadline, now):
                self._drop(stream, op_id, (PAST_DEADLINE, _UNSPECIFIED))
        wakes = [lease._deadline for lease in stream.holds.values()]
        if not stream.closing:  # after close() the server's end is awaited, no pong
            wake = self._ping(stream, now)
            if wake is None:
                return None
            wakes.append(wake)
        return None if stream.ended else min(wakes, default=math.inf)

    def _ping(self, stream, now):
        """Pings when due; cuts the stream off (returns None) when a pong is overdue."""
        if stream.ping is not None:
            due = stream.ping[1] + self._timeout_s
            if now < due:
                return due
            self._end(stream, f"no answer to a ping within {self._timeout_s:g} s: the stream is cut off",
                      grpc.StatusCode.UNAVAILABLE)
            return None
        if not stream.holds:
            return math.inf
        if now < stream.next_ping_at:
            return stream.next_ping_at
        stream.ping = (next(self._op_ids), time.monotonic())  # sent_at: read before the ping leaves
        stream.next_ping_at = stream.ping[1] + self._ping_interval_s
        stream.send(stream.ping[0], ping=lock_pb2.SessionPing())
        return stream.ping[1] + self._timeout_s

    def _ended_by(self, stream, error):
        """The stream's end as gRPC reported it (None: the server ended it with OK)."""
        if error is None:
            self._end(stream, "the server ended it", grpc.StatusCode.UNAVAILABLE)
        else:
            self._end(stream, f"{error.code().name}: {translate(error, self.addr).cause}", error.code())

    def _end(self, stream, cause, code):
        """The stream is over: operations in flight fail, leases are lost (unless close() released them)."""
        if stream.ended:
            return
        stream.ended = True
        stream.half_close()
        error = ended_error(self.addr, cause, code)
        for pending in stream.pending.values():
            if not pending.abandoned:
                pending.settle(error=error)
        stream.pending.clear()
        holds, stream.holds = list(stream.holds.values()), {}
        for lease in holds:
            lease._ended = True
            lease._lose(f"the session ended ({cause})", _UNSPECIFIED)
        if self._stream is stream:
            self._stream = None
        self._wake(stream)
