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
(SessionClosed). holdfast.asession is the same on a grpc.aio channel.
"""

import math
import threading
import time

import grpc

from holdfast.errors import HoldfastError
from holdfast.lease import hold_request
from holdfast.session_core import CALL_TIMEOUT_S, PING_INTERVAL_S, SessionClosed, SessionCore, not_acquired_in_time
from holdfast.session_lease import SessionLease
from holdfast.session_stream import Stream
from holdfast.v1 import lock_pb2


class Session(SessionCore):
    """A Session stream to one server; see the module's doc. Use as a context manager, or call close()."""

    _lease_class = SessionLease
    _new_event = threading.Event

    def __init__(self, channel, timeout_s=CALL_TIMEOUT_S, ping_interval_s=PING_INTERVAL_S):
        super().__init__(channel, timeout_s, ping_interval_s)
        self._lock = threading.Condition()  # guards the session, its streams and its leases

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def hold(self, name, ttl_ms=0, wait_ms=0, owner="", shared=False, limit=0, max_hold_ms=0, value=""):
        """Holds `name` under the session until released or the session ends; returns its SessionLease.

        Raises NotAcquired when it is not granted within wait_ms, DeadlockError when the server ended
        the wait to break a deadlock (the session is the owner when `owner` is empty), LeaseLost when
        the grant came after its lease could have ended (it is given back), HoldfastError as the Hold
        call would.
        """
        request = hold_request(name, ttl_ms, wait_ms, owner, shared, limit, max_hold_ms, False, value)
        with not_acquired_in_time(name, wait_ms):
            return self._granted(self._run("hold", request, wait_ms / 1000.0))

    def release(self, name, token, hold_id=""):
        """holdfast.release over the session: True when the grant was freed, False when holds remain."""
        return self._run("release", lock_pb2.ReleaseRequest(name=name, token=token, hold_id=hold_id)).released

    def inspect(self, name):
        """holdfast.inspect over the session: the InspectResponse for `name`."""
        return self._run("inspect", lock_pb2.InspectRequest(name=name))

    def close(self):
        """Ends the session cleanly: the server answers what is in flight, then frees every lock held
        under it at once. Its leases end released (not lost). Later operations raise SessionClosed."""
        with self._lock:
            stream = self._begin_close()
        if stream is None:
            return
        reader, keeper = stream.tasks
        reader.join(self._timeout_s)
        if reader.is_alive():  # no end from the server in time: a cancel frees the locks of a live client too
            stream.call.cancel()
            reader.join()
        keeper.join()

    def _wake(self, stream):
        self._lock.notify_all()  # the caller holds the lock

    def _open(self):
        """The open stream, or a new one (the caller holds the lock)."""
        stream = self._current()
        if stream is not None:
            return stream
        stream = Stream(self._stub, self._ping_interval_s)
        for target, what in ((self._read, "read"), (self._keep, "keep")):
            thread = threading.Thread(target=target, args=(stream,), name=f"holdfast-session-{what}", daemon=True)
            stream.tasks.append(thread)
            thread.start()
        self._stream = stream
        return stream

    def _run(self, kind, request, extra_s=0.0, stream=None):
        """Sends one operation and waits for its answer (the response message, or for `hold` its lease)."""
        with self._lock:
            stream = stream or self._open()
            op_id, pending = self._start(stream, kind, request)
        timeout_s = self._timeout_s + extra_s
        if not pending.done.wait(timeout_s):
            with self._lock:
                if not pending.done.is_set():
                    self._abandon(stream, op_id, pending)
                    raise self._timed_out(timeout_s)
        return self._outcome(pending)

    def _give_back(self, lease):
        """Releases a lease's hold over its own stream; True when the server confirmed it."""
        with self._lock:
            stream = self._take_back(lease)
        if stream is None:
            return False
        request = lock_pb2.ReleaseRequest(name=lease.name, token=lease.token, hold_id=lease.hold_id)
        try:
            self._run("release", request, stream=stream)
            return True
        except (HoldfastError, SessionClosed):
            return False

    def _read(self, stream):
        error = None
        try:
            for response in stream.call:
                with self._lock:
                    self._on_message(stream, response)
        except grpc.RpcError as err:
            error = err
        with self._lock:
            self._ended_by(stream, error)

    def _keep(self, stream):
        with self._lock:
            while True:
                wake = self._keep_step(stream, time.monotonic())
                if wake is None:
                    break
                self._lock.wait(None if wake == math.inf else max(0.0, wake - time.monotonic()))
        stream.call.cancel()  # a no-op once it has ended; cuts off a silent one


def session(channel, timeout_s=CALL_TIMEOUT_S, ping_interval_s=PING_INTERVAL_S):
    """A Session on `channel` (holdfast.channel): `with holdfast.session(channel) as s: s.hold(...)`."""
    return Session(channel, timeout_s, ping_interval_s)
