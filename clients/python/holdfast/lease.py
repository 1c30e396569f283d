"""A lock held through the Hold stream, with a local deadline the client keeps itself.

The server renews the lease and reports each renewal. The client trusts a renewal only until
`ttl - safety margin` after it arrived: if nothing confirms the lease by then (a silent network,
a stopped server), the lease counts as lost even though no `lost` event came.
"""

import threading
import time

import grpc

from holdfast.v1 import lock_pb2, lock_pb2_grpc

# How long Release may take on the way out before the stream is cancelled anyway.
RELEASE_TIMEOUT_S = 5.0
# Extra time to wait for the server's own answer after wait_ms has passed.
ACQUIRE_GRACE_S = 2.0


class NotAcquired(Exception):
    """The lock was not granted within wait_ms."""


class LeaseLost(Exception):
    """The lease is lost; the caller no longer holds the lock."""


def safety_margin_ms(ttl_ms):
    """The server's watchdog margin: a tenth of the lease, between 5 ms and 1 s."""
    return min(1000.0, max(5.0, ttl_ms / 10.0))


class Lease:
    """One grant kept alive by an open Hold stream. Built by `lock`; read its fields inside the block."""

    def __init__(self, stub, name, request, safety_margin):
        self.name = name
        self.token = ""
        self.fencing_token = 0
        self.hold_count = 0
        self.ttl_ms = 0
        # Set once the lease can no longer be trusted; never cleared.
        self.lost = threading.Event()
        self.lost_reason = None
        # A holdfast.v1.LostReason value; LOST_REASON_UNSPECIFIED when the client decided alone.
        self.lost_code = lock_pb2.LOST_REASON_UNSPECIFIED
        self._stub = stub
        self._request = request
        self._margin = safety_margin
        self._cond = threading.Condition()
        self._acquired = False
        self._ended = False
        self._closing = False
        self._error = None
        self._deadline = None  # time.monotonic() after which the lease counts as lost
        self._call = None
        self._threads = []

    @property
    def deadline(self):
        """The local monotonic time after which this lease counts as lost."""
        with self._cond:
            return self._deadline

    def check(self):
        """Raises LeaseLost when the lease is lost (a fencing point before a side effect)."""
        if self.lost.is_set() or time.monotonic() >= (self.deadline or 0):
            self._lose("no renewal was confirmed before the local deadline", lock_pb2.LOST_REASON_UNSPECIFIED)
            raise LeaseLost(f'lock "{self.name}": {self.lost_reason}')

    def _open(self, wait_s):
        self._call = self._stub.Hold(self._request)
        for target in (self._read, self._watch):
            thread = threading.Thread(target=target, name=f"holdfast-{target.__name__[1:]}", daemon=True)
            thread.start()
            self._threads.append(thread)
        with self._cond:
            self._cond.wait_for(lambda: self._acquired or self._ended, timeout=wait_s)
            if self._acquired:
                return
            error = self._error
        self._close_stream()
        if error is None or (isinstance(error, grpc.RpcError) and error.code() == grpc.StatusCode.DEADLINE_EXCEEDED):
            raise NotAcquired(f'lock "{self.name}" was not acquired within {self._request.wait_timeout_ms} ms')
        raise error

    def _read(self):
        error = None
        try:
            for response in self._call:
                self._on_event(response, time.monotonic())
        except grpc.RpcError as err:
            error = err
        with self._cond:
            self._ended = True
            self._error = error
            self._cond.notify_all()
            if not self._acquired or self._closing:
                return
        detail = "the Hold stream ended" if error is None else f"the Hold stream ended: {error.code().name} {error.details()}"
        self._lose(detail, lock_pb2.LOST_REASON_UNSPECIFIED)

    def _on_event(self, response, received_at):
        kind = response.WhichOneof("event")
        if kind == "lost":
            self._lose(response.lost.reason, response.lost.code)
            return
        with self._cond:
            if kind == "acquired":
                grant = response.acquired
                self.token, self.fencing_token = grant.token, grant.fencing_token
                self.hold_count, self.ttl_ms = grant.hold_count, grant.ttl_ms
                self._acquired = True
                ttl_left = grant.ttl_ms
            elif kind == "renewed":
                ttl_left = response.renewed.ttl_ms
            else:
                return
            margin = self._margin if self._margin is not None else safety_margin_ms(self.ttl_ms)
            self._deadline = received_at + (ttl_left - margin) / 1000.0
            self._cond.notify_all()

    def _watch(self):
        with self._cond:
            while not (self._ended or self._closing or self.lost.is_set()):
                if self._deadline is None:
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(timeout=left)
            else:
                return
        self._lose("no renewal was confirmed before the local deadline", lock_pb2.LOST_REASON_UNSPECIFIED)

    def _lose(self, reason, code):
        with self._cond:
            if self.lost.is_set() or self._closing:
                return
            self.lost_reason, self.lost_code = reason, code
            self.lost.set()
            self._cond.notify_all()

    def release(self):
        """Releases the grant with its token, then ends the stream. Safe to call twice."""
        with self._cond:
            if self._closing:
                return
            self._closing = True
            self._cond.notify_all()
            held = self._acquired and not self.lost.is_set() and not self._ended
        if held:
            try:
                self._stub.Release(lock_pb2.ReleaseRequest(name=self.name, token=self.token), timeout=RELEASE_TIMEOUT_S)
            except grpc.RpcError:
                pass  # lost meanwhile, or the server is gone: cancelling below releases what is left
        self._close_stream()

    def _close_stream(self):
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._call.cancel()
        for thread in self._threads:
            thread.join()


class lock:  # noqa: N801 - used like a function: `with holdfast.lock(...) as lease`
    """Holds `name` for the duration of a with-block through the Hold stream.

    Raises NotAcquired when the lock is not granted within wait_ms. Inside the block, `lease.lost`
    is set as soon as the lease can no longer be trusted. Leaving the block releases the lock.
    """

    def __init__(self, channel, name, ttl_ms=0, wait_ms=0, owner="", shared=False, limit=0, max_hold_ms=0,
                 safety_margin_ms=None):
        mode = lock_pb2.LOCK_MODE_SHARED if shared else lock_pb2.LOCK_MODE_EXCLUSIVE
        request = lock_pb2.HoldRequest(name=name, owner=owner, ttl_ms=ttl_ms, wait_timeout_ms=wait_ms, mode=mode,
                                       limit=limit, max_hold_ms=max_hold_ms)
        self._wait_s = wait_ms / 1000.0 + ACQUIRE_GRACE_S
        self._lease = Lease(lock_pb2_grpc.LockServiceStub(channel), name, request, safety_margin_ms)

    def __enter__(self):
        self._lease._open(self._wait_s)
        return self._lease

    def __exit__(self, *exc):
        self._lease.release()
        return False
