"""Many locks held under one Session stream, with one heartbeat for all of them (docs/sessions.md).

    with holdfast.session(channel) as session:
        leases = [session.hold(f"jobs/{n}", ttl_ms=10_000, wait_ms=5_000) for n in range(200)]
        ...

One stream carries every operation, each with an op_id this side picks; answers are matched by
op_id, so operations from many threads are in flight at once. The server renews every lock held
with `hold` and sends one `renewed` message per tick for the whole session, which moves every
lease's deadline (holdfast.session_deadline). Per stream, one thread reads it and one keeps time:
it marks leases lost at their deadline, pings once a minute while locks are held (the pong moves
the deadline's anchor), and cuts the stream off when a pong does not come within the call timeout.

When the stream ends other than by close(), every lease under it is lost at once and every
operation in flight raises a HoldfastError naming the address and saying it may or may not have
taken effect; the next operation opens a new stream. close() ends it cleanly: the server frees
every lock at once, and the leases end released, not lost. A closed Session refuses operations
(SessionClosed).
"""

import collections
import itertools
import math
import threading
import time

import grpc

from holdfast.errors import HoldfastError, address_of, translate
from holdfast.lease import PAST_DEADLINE, LeaseLost, NotAcquired, deadline_passed, hold_request
from holdfast.session_lease import SessionLease
from holdfast.session_stream import Pending, Stream, ended_error, op_error
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


class Session:
    """A Session stream to one server; see the module's doc. Use as a context manager, or call close()."""

    def __init__(self, channel, timeout_s=CALL_TIMEOUT_S, ping_interval_s=PING_INTERVAL_S):
        self.addr = address_of(channel)
        self._stub = lock_pb2_grpc.LockServiceStub(channel)
        self._timeout_s, self._ping_interval_s = timeout_s, ping_interval_s
        self._cond = threading.Condition()  # guards the session, its streams and its leases
        self._stream = None
        self._closed = False
        self._op_ids = itertools.count(1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def hold(self, name, ttl_ms=0, wait_ms=0, owner="", shared=False, limit=0, max_hold_ms=0, value=""):
        """Holds `name` under the session until released or the session ends; returns its SessionLease.

        Raises NotAcquired when it is not granted within wait_ms, LeaseLost when the grant came after
        its lease could have ended (it is given back), HoldfastError as the Hold call would.
        """
        request = hold_request(name, ttl_ms, wait_ms, owner, shared, limit, max_hold_ms, False, value)
        try:
            lease = self._run("hold", request, wait_ms / 1000.0)
        except HoldfastError as error:
            if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise NotAcquired(f'lock "{name}" was not acquired within {wait_ms} ms') from error
            raise
        if lease.lost.is_set():
            raise LeaseLost(f'lock "{name}": {lease.lost_reason}')
        return lease

    def release(self, name, token, hold_id=""):
        """holdfast.release over the session: True when the grant was freed, False when holds remain."""
        request = lock_pb2.ReleaseRequest(name=name, token=token, hold_id=hold_id)
        return self._run("release", request).released

    def inspect(self, name):
        """holdfast.inspect over the session: the InspectResponse for `name`."""
        return self._run("inspect", lock_pb2.InspectRequest(name=name))

    def stats(self):
        """What the current stream has seen (SessionStats), or None before the first operation."""
        with self._cond:
            stream = self._stream
            if stream is None:
                return None
            return SessionStats(stream.anchors.opened_at, stream.anchors.all(), len(stream.holds),
                                stream.renewed_messages, stream.pongs, stream.last_renewed)

    def close(self):
        """Ends the session cleanly: the server answers what is in flight, then frees every lock held
        under it at once. Its leases end released (not lost). Later operations raise SessionClosed."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            stream, self._stream = self._stream, None
            if stream is None or stream.ended:
                return
            stream.closing = True
            for lease in stream.holds.values():
                lease._closing = True
            stream.send(next(self._op_ids), close=lock_pb2.SessionClose())
            stream.half_close()
            self._cond.notify_all()
        reader, keeper = stream.threads
        reader.join(self._timeout_s)
        if reader.is_alive():  # no end from the server in time: cancelling frees the locks of a live client too
            stream.call.cancel()
            reader.join()
        keeper.join()

    def _open(self):
        """The open stream, or a new one (the caller holds the lock)."""
        if self._closed:
            raise SessionClosed(f"the session with holdfast at {self.addr} is closed: open a new one")
        if self._stream is not None and not self._stream.ended:
            return self._stream
        stream = Stream(self._stub, self._ping_interval_s)
        for target, what in ((self._read, "read"), (self._keep, "keep")):
            thread = threading.Thread(target=target, args=(stream,), name=f"holdfast-session-{what}", daemon=True)
            stream.threads.append(thread)
            thread.start()
        self._stream = stream
        return stream

    def _run(self, kind, request, extra_s=0.0, stream=None):
        """Sends one operation and waits for its answer (the response message, or for `hold` its lease)."""
        with self._cond:
            stream = stream or self._open()
            if stream.ended:
                raise ended_error(self.addr, "before this operation was sent", grpc.StatusCode.UNAVAILABLE)
            op_id = next(self._op_ids)
            pending = stream.pending[op_id] = Pending(request)
            stream.send(op_id, **{kind: request})
        timeout_s = self._timeout_s + extra_s
        if not pending.done.wait(timeout_s):
            with self._cond:
                if not pending.done.is_set():
                    pending.abandoned = True
                    stream.send(next(self._op_ids), cancel=op_id)
                    raise HoldfastError(self.addr, f"no answer on the session within {timeout_s:g} s",
                                        grpc.StatusCode.DEADLINE_EXCEEDED)
        if pending.error is not None:
            raise pending.error
        return pending.response

    def _give_back(self, lease):
        """Releases a lease's hold over its own stream; True when the server confirmed it."""
        with self._cond:
            stream = lease._stream
            if stream.ended or stream.holds.pop(lease._op_id, None) is None:
                return False
        request = lock_pb2.ReleaseRequest(name=lease.name, token=lease.token, hold_id=lease.hold_id)
        try:
            self._run("release", request, stream=stream)
            return True
        except (HoldfastError, SessionClosed):
            return False

    def _send_release(self, stream, name, token, hold_id=""):
        """Gives back a grant nobody will use, without waiting for the answer (the caller holds the lock)."""
        op_id = next(self._op_ids)
        stream.pending[op_id] = Pending(None)
        stream.pending[op_id].abandoned = True
        stream.send(op_id, release=lock_pb2.ReleaseRequest(name=name, token=token, hold_id=hold_id))

    def _read(self, stream):
        error = None
        try:
            for response in stream.call:
                with self._cond:
                    self._on_message(stream, response)
        except grpc.RpcError as err:
            error = err
        with self._cond:
            if error is None:
                self._end(stream, "the server ended it", grpc.StatusCode.UNAVAILABLE)
            else:
                failure = translate(error, self.addr)
                self._end(stream, f"{error.code().name}: {failure.cause}", error.code())

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
                self._cond.notify_all()
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
        self._cond.notify_all()

    def _answered(self, stream, response, kind):
        pending = stream.pending.pop(response.op_id, None)
        if pending is None:
            return
        if pending.abandoned:  # its caller gave up: a grant that came anyway is given back
            grant = response.hold if kind == "hold" else response.acquire if kind == "acquire" else None
            if grant is not None and (kind == "hold" or grant.acquired):
                self._send_release(stream, pending.request.name, grant.token, getattr(grant, "hold_id", ""))
        elif kind == "error":
            pending.settle(error=op_error(self.addr, response.error.code, response.error.message))
        elif kind == "hold":
            pending.settle(self._held(stream, response.op_id, pending.request, response.hold))
        else:
            pending.settle(getattr(response, kind))

    def _held(self, stream, op_id, request, grant):
        """The lease for a hold's grant, registered before any later message is read."""
        lease = SessionLease(self, stream, op_id, request, grant)
        stream.holds[op_id] = lease
        lost = lease._confirm(stream.anchors.deadline(grant.lease_started_after_ms, grant.ttl_ms), "the grant")
        if lost:
            self._drop(stream, op_id, lost)
        self._cond.notify_all()
        return lease

    def _drop(self, stream, op_id, lost):
        """A lease lost on this side: reported, and its hold given back if the server still keeps it."""
        lease = stream.holds.pop(op_id)
        lease._lose(*lost)
        self._send_release(stream, lease.name, lease.token, lease.hold_id)

    def _keep(self, stream):
        """Marks leases lost at their deadline, pings, and cuts off a stream whose pong does not come."""
        with self._cond:
            while not stream.ended:
                now = time.monotonic()
                for op_id, lease in list(stream.holds.items()):
                    if deadline_passed(lease._deadline, now):
                        self._drop(stream, op_id, (PAST_DEADLINE, _UNSPECIFIED))
                wakes = [lease._deadline for lease in stream.holds.values()]
                if not stream.closing:  # after close() the server's end is awaited, no pong
                    wake = self._ping(stream, now)
                    if wake is None:
                        break
                    wakes.append(wake)
                wake = min(wakes, default=math.inf)
                self._cond.wait(None if wake == math.inf else max(0.0, wake - time.monotonic()))
        stream.call.cancel()  # a no-op once it has ended; cuts off a silent one

    def _ping(self, stream, now):
        """Pings when due; cuts the stream off (returns None) when a pong is overdue. Returns when to look
        again (infinity when nothing is held and no pong is awaited)."""
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

    def _end(self, stream, cause, code):
        """The stream is over (the caller holds the lock): operations in flight fail, leases are lost."""
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
        self._cond.notify_all()


def session(channel, timeout_s=CALL_TIMEOUT_S, ping_interval_s=PING_INTERVAL_S):
    """A Session on `channel` (holdfast.channel): `with holdfast.session(channel) as s: s.hold(...)`."""
    return Session(channel, timeout_s, ping_interval_s)
