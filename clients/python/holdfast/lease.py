"""A lock held through the Hold stream, with a local deadline the client keeps itself.

The server renews the lease and reports each renewal with lease_started_after_ms: how long after
it received the Hold request it started that grant or renewal. The request cannot have been
received before it was sent, so the lease ends no earlier than

    sent_at + lease_started_after_ms + ttl_ms - drift_margin_ms(lease_started_after_ms + ttl_ms)

on this side's monotonic clock, whatever the network did meanwhile. That deadline only moves
forward. When it passes, the lease counts as lost even though no `lost` event came; a grant or
renewal that arrives after its own deadline makes the lease lost at once (it is never reported
held). A server that sends no lease_started_after_ms (0) only makes the deadline earlier.
clients/conformance/lease-deadline.json holds the cases every SDK's deadline runs.
"""

import threading
import time

import grpc

from holdfast.errors import address_of, translate
from holdfast.fencing import wire as fencing_wire
from holdfast.v1 import lock_pb2, lock_pb2_grpc

# How long Release may take on the way out before the stream is cancelled anyway.
RELEASE_TIMEOUT_S = 5.0
# Extra time to wait for the server's own answer after wait_ms has passed.
ACQUIRE_GRACE_S = 2.0
# Clock-rate allowance: 5 ms, plus 100 ppm of the interval counted (the client, server and Redis
# clocks may each run that much fast or slow against one another).
CLOCK_DRIFT = (5.0, 1e-4)


class NotAcquired(Exception):
    """The lock was not granted within wait_ms."""


class LeaseLost(Exception):
    """The lease is lost; the caller no longer holds the lock."""


def drift_margin_ms(counted_ms):
    """The clock drift allowance for a lease that ends `counted_ms` after its request was sent."""
    fixed_ms, rate = CLOCK_DRIFT
    return fixed_ms + counted_ms * rate


def lease_deadline(sent_at, lease_started_after_ms, ttl_ms):
    """The conservative end of a lease in time.monotonic() seconds; sent_at is when the request was sent."""
    counted_ms = lease_started_after_ms + ttl_ms
    return sent_at + (counted_ms - drift_margin_ms(counted_ms)) / 1000.0


def later_deadline(kept, confirmed):
    """The deadline a lease keeps after a confirmation whose own deadline is `confirmed` (kept is None
    before the grant): the later of the two, as the server never shortens a lease."""
    return confirmed if kept is None else max(kept, confirmed)


def deadline_passed(deadline, now):
    """Whether a lease with this deadline is (or may be) lost at `now`: from its deadline on it may be
    someone else's, so a confirmation arriving then, or a look at the clock, finds it lost."""
    return now >= deadline


# Why a lease counts as lost when nothing but the local clock said so.
PAST_DEADLINE = "no renewal was confirmed before the local deadline"


def hold_request(name, ttl_ms=0, wait_ms=0, owner="", shared=False, limit=0, max_hold_ms=0,
                 release_on_disconnect=False, value=""):
    """The HoldRequest both `lock` and `alock` send."""
    mode = lock_pb2.LOCK_MODE_SHARED if shared else lock_pb2.LOCK_MODE_EXCLUSIVE
    return lock_pb2.HoldRequest(name=name, owner=owner, ttl_ms=ttl_ms, wait_timeout_ms=wait_ms, mode=mode,
                                limit=limit, max_hold_ms=max_hold_ms, release_on_disconnect=release_on_disconnect,
                                value=value)


class LeaseState:
    """The fields a lease shows, and what one Hold event does to them (callers do their own locking)."""

    def __init__(self, stub, name, request):
        self.name = name
        self.addr = None  # the server's address, for errors
        self.token = ""
        self.hold_id = ""  # this stream's own hold of the grant (a reentrant grant has one per holder)
        self.fencing_token = 0
        # The grant's signed fence ("" when the server signs none); each renewal brings a fresh one
        # stating the renewed lease's end. A bearer credential like the token: never log it.
        self.signed_fence = ""
        self.hold_count = 0
        self.ttl_ms = 0
        self.lost_reason = None
        # A holdfast.v1.LostReason value; LOST_REASON_UNSPECIFIED when the client decided alone.
        self.lost_code = lock_pb2.LOST_REASON_UNSPECIFIED
        self._request = request
        self._sent_at = None  # time.monotonic() just before the Hold call started
        self._acquired = False
        self._deadline = None  # time.monotonic(): the lease ends no earlier than this
        self._stub = stub
        self._call = None
        self._ended = False
        self._closing = False
        self._error = None

    def _record(self, response):
        """Applies one HoldResponse; returns (reason, code) when it makes the lease lost."""
        kind = response.WhichOneof("event")
        if kind == "lost":
            return response.lost.reason, response.lost.code
        if kind == "acquired":
            grant = response.acquired
            self.token, self.hold_id, self.fencing_token = grant.token, grant.hold_id, grant.fencing_token
            self.hold_count, self.ttl_ms, self.signed_fence = grant.hold_count, grant.ttl_ms, grant.signed_fence
            self._acquired = True
            confirmed, what = grant, "the grant"
        elif kind == "renewed":
            confirmed, what = response.renewed, "a renewal"
            if confirmed.signed_fences:  # a Hold's one fence
                self.signed_fence = confirmed.signed_fences[0]
        else:
            return None
        return self._confirm(lease_deadline(self._sent_at, confirmed.lease_started_after_ms, confirmed.ttl_ms), what)

    def _confirm(self, deadline, what):
        """Moves the deadline forward to `deadline`; returns (reason, code) when the lease is lost by then."""
        self._deadline = later_deadline(self._deadline, deadline)
        if deadline_passed(self._deadline, time.monotonic()):
            return f"{what} arrived after the lease could have ended", lock_pb2.LOST_REASON_UNSPECIFIED
        return None

    def _open_failure(self, error):
        """What a Hold that was never granted raises: NotAcquired when its wait ran out, else the refusal
        (a DeadlockError when the server ended the wait to break a deadlock)."""
        if error is None or (isinstance(error, grpc.RpcError) and error.code() == grpc.StatusCode.DEADLINE_EXCEEDED):
            return NotAcquired(f'lock "{self.name}" was not acquired within {self._request.wait_timeout_ms} ms')
        return translate(error, self.addr, self.name)

    @staticmethod
    def _ended_reason(error):
        """Why a held lease is lost when its stream ends without a lost event."""
        return "the Hold stream ended" if error is None else f"the Hold stream ended: {error.code().name} {error.details()}"

    def fence(self, headers=None):
        """`headers` (a dict, or a new one) with this grant's fence added: Holdfast-Fence (its newest
        signed fence, when the server signs them), Holdfast-Fence-Lock and -Token. A guarded HTTP
        resource refuses the request once a newer holder has written."""
        headers = {} if headers is None else headers
        headers.update(fencing_wire.http_headers(self.name, self.fencing_token, self.signed_fence))
        return headers

    def fence_metadata(self, metadata=()):
        """gRPC call metadata: `metadata` plus this grant's holdfast-fence (when signed),
        holdfast-fence-lock and -token."""
        return [*metadata, *fencing_wire.grpc_metadata(self.name, self.fencing_token, self.signed_fence)]

    def check(self):
        """Raises LeaseLost when the lease is lost (a fencing point before a side effect)."""
        if self.lost.is_set() or deadline_passed(self.deadline or 0, time.monotonic()):
            self._lose(PAST_DEADLINE, lock_pb2.LOST_REASON_UNSPECIFIED)
            raise LeaseLost(f'lock "{self.name}": {self.lost_reason}')


class Lease(LeaseState):
    """One grant kept alive by an open Hold stream. Built by `lock`; read its fields inside the block."""

    def __init__(self, stub, name, request):
        super().__init__(stub, name, request)
        # Set once the lease can no longer be trusted; never cleared.
        self.lost = threading.Event()
        self._cond = threading.Condition()
        self._threads = []

    @property
    def deadline(self):
        """The conservative end of the lease (time.monotonic()); it counts as lost from then on."""
        with self._cond:
            return self._deadline

    def _open(self, wait_s):
        self._sent_at = time.monotonic()
        self._call = self._stub.Hold(self._request)
        for target in (self._read, self._watch):
            thread = threading.Thread(target=target, name=f"holdfast-{target.__name__[1:]}", daemon=True)
            thread.start()
            self._threads.append(thread)
        with self._cond:
            self._cond.wait_for(lambda: self._acquired or self._ended, timeout=wait_s)
            acquired, error = self._acquired, self._error
        if acquired:
            try:
                self.check()  # a grant that came too late is never handed out
                return
            except LeaseLost as lost:
                error = lost
        self._close_stream()  # frees the hold at once if the server still keeps it and can hear us
        raise error if acquired else self._open_failure(error)

    def _read(self):
        error = None
        try:
            for response in self._call:
                self._on_event(response)
        except grpc.RpcError as err:
            error = err
        with self._cond:
            self._ended = True
            self._error = error
            self._cond.notify_all()
            if not self._acquired or self._closing:
                return
        self._lose(self._ended_reason(error), lock_pb2.LOST_REASON_UNSPECIFIED)

    def _on_event(self, response):
        with self._cond:
            lost = self._record(response)
            self._cond.notify_all()
        if lost:
            self._lose(*lost)

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
        self._lose(PAST_DEADLINE, lock_pb2.LOST_REASON_UNSPECIFIED)

    def _lose(self, reason, code):
        with self._cond:
            if self.lost.is_set() or self._closing:
                return
            self.lost_reason, self.lost_code = reason, code
            self.lost.set()
            self._cond.notify_all()

    def set_value(self, value, timeout=RELEASE_TIMEOUT_S):
        """Replaces the value this grant publishes to watchers; raises HoldfastError (NOT_FOUND) once it is gone."""
        try:
            self._stub.SetValue(lock_pb2.SetValueRequest(name=self.name, token=self.token, value=value), timeout=timeout)
        except grpc.RpcError as error:
            raise translate(error, self.addr) from error

    def release(self):
        """Gives back exactly this stream's hold (Release with token and hold_id), then ends the stream.

        Returns True when the server confirmed that this hold was given back now; False when there
        was nothing to give back (released before, or the lease was already lost) or the Release
        call failed (unreachable: ending the stream then frees the hold on a live connection, and
        otherwise the lease runs out). Never raises. Safe to call twice (the second call returns False).
        """
        with self._cond:
            if self._closing:
                return False
            self._closing = True
            self._cond.notify_all()
            held = self._acquired and not self.lost.is_set() and not self._ended
        given_back = False
        if held:
            try:
                request = lock_pb2.ReleaseRequest(name=self.name, token=self.token, hold_id=self.hold_id)
                self._stub.Release(request, timeout=RELEASE_TIMEOUT_S)
                given_back = True
            except grpc.RpcError:
                pass  # lost meanwhile, or unreachable: the cancel frees the hold on a live connection
        self._close_stream()
        return given_back

    def _close_stream(self):
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._call.cancel()
        for thread in self._threads:
            thread.join()


class lock:  # noqa: N801 - used like a function: `with holdfast.lock(...) as lease`
    """Holds `name` for the duration of a with-block through the Hold stream.

    Raises NotAcquired when the lock is not granted within wait_ms, DeadlockError when the server
    ended the wait to break a deadlock, and LeaseLost when the grant arrives after its lease could
    have ended. Inside the block, `lease.lost` is set as soon as the
    lease can no longer be trusted. Leaving the block gives back this block's hold. `value` is
    published to watchers (at most 1024 bytes); lease.set_value() changes it.

    release_on_disconnect=True opts in to the old fast release: the server frees the lock the
    moment the stream ends, however it ends. That gives up the guarantee that a holder that is
    only paused or cut off never believes it holds a lock someone else has.
    """

    def __init__(self, channel, name, ttl_ms=0, wait_ms=0, owner="", shared=False, limit=0, max_hold_ms=0,
                 release_on_disconnect=False, value=""):
        request = hold_request(name, ttl_ms, wait_ms, owner, shared, limit, max_hold_ms, release_on_disconnect, value)
        self._wait_s = wait_ms / 1000.0 + ACQUIRE_GRACE_S
        self._lease = Lease(lock_pb2_grpc.LockServiceStub(channel), name, request)
        self._lease.addr = address_of(channel)

    def __enter__(self):
        self._lease._open(self._wait_s)
        return self._lease

    def __exit__(self, *exc):
        self._lease.release()
        return False
