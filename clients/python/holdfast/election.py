"""Leader election on a lock: campaign() holds it through a Hold stream with a published value,
observe() follows who holds it through Watch.

    with holdfast.campaign(channel, "report-job", "10.0.0.7:8080", ttl_ms=5_000) as leader:
        run_job(fencing_token=leader.fencing_token, stop=leader.lost)

    for leader in holdfast.observe(channel, "report-job"):
        print(leader.value if leader else "no leader")

The leader is the lock's exclusive holder. Its fencing token is greater than every earlier
leader's: send it with every write, so that downstream services can refuse a deposed leader.
"""

import collections
import time

import grpc

from holdfast.errors import address_of, translate
from holdfast.lease import NotAcquired, lock
from holdfast.v1 import lock_pb2, lock_pb2_grpc

# The longest wait one Hold may ask for; campaign() asks again after it.
CAMPAIGN_WAIT_MS = 86_400_000
# Errors after which watching again cannot help.
FINAL_CODES = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)

Leader = collections.namedtuple("Leader", ["owner", "value", "fencing_token"])


class Leadership:
    """Won by campaign(): `lost` (a threading.Event) is set when leadership is or may be lost.

    Leaving the with-block (or resign()) steps down: the lock is freed at once.
    """

    def __init__(self, held, lease):
        self._held = held
        self._lease = lease
        self.name = lease.name
        self.fencing_token = lease.fencing_token
        self.lost = lease.lost

    @property
    def lost_reason(self):
        return self._lease.lost_reason

    @property
    def signed_fence(self):
        """The leader's newest signed fence ("" when the server signs none): see Lease.signed_fence."""
        return self._lease.signed_fence

    def check(self):
        """Raises LeaseLost when leadership is lost: call it before each side effect."""
        self._lease.check()

    def fence(self, headers=None):
        """The leader's fence on HTTP headers: see Lease.fence."""
        return self._lease.fence(headers)

    def fence_metadata(self, metadata=()):
        """The leader's fence as gRPC metadata: see Lease.fence_metadata."""
        return self._lease.fence_metadata(metadata)

    def proclaim(self, value):
        """Publishes a new value to observers."""
        self._lease.set_value(value)

    def resign(self):
        self._held.__exit__(None, None, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.resign()
        return False


def campaign(channel, name, value, ttl_ms=0, owner=""):
    """Blocks until this candidate leads `name`, publishing `value`; returns its Leadership."""
    while True:
        held = lock(channel, name, ttl_ms=ttl_ms, wait_ms=CAMPAIGN_WAIT_MS, owner=owner, value=value)
        try:
            return Leadership(held, held.__enter__())
        except NotAcquired:
            continue


class watch:  # noqa: N801 - used like a function
    """Iterates over the WatchResponse messages of `name`: its state, then each change.

    cancel() (from any thread) ends the iteration.
    """

    def __init__(self, channel, name, timeout=None):
        self._call = lock_pb2_grpc.LockServiceStub(channel).Watch(lock_pb2.WatchRequest(name=name), timeout=timeout)
        self._addr = address_of(channel)
        self.cancelled = False

    def __iter__(self):
        try:
            yield from self._call
        except grpc.RpcError as err:
            if not (self.cancelled and err.code() == grpc.StatusCode.CANCELLED):
                raise translate(err, self._addr) from err
        finally:
            self._call.cancel()

    def cancel(self):
        self.cancelled = True
        self._call.cancel()


def leader_of(response):
    """The exclusive holder that still holds (hold_count > 0), as a Leader, or None."""
    for holder in response.holders:
        if holder.hold_count > 0 and holder.mode != lock_pb2.LOCK_MODE_SHARED:
            return Leader(holder.owner, holder.value, holder.fencing_token)
    return None


class observe:  # noqa: N801 - used like a function
    """Iterates over the leaders of `name` (None while there is none): now, then after every change.

    Watches again after `retry_s` when the stream fails (a server restart). cancel() (from any
    thread) ends the iteration.
    """

    def __init__(self, channel, name, retry_s=1.0):
        self._channel, self._name, self._retry_s = channel, name, retry_s
        self._watch = None
        self.cancelled = False

    def __iter__(self):
        last = ()
        while not self.cancelled:
            self._watch = watch(self._channel, self._name)
            if self.cancelled:
                self._watch.cancel()
            try:
                for response in self._watch:
                    leader = leader_of(response)
                    if leader != last:
                        last = leader
                        yield leader
            except grpc.RpcError as err:
                if err.code() in FINAL_CODES:
                    raise
            if not self.cancelled:
                time.sleep(self._retry_s)

    def cancel(self):
        self.cancelled = True
        if self._watch:
            self._watch.cancel()
