"""The asyncio client, on grpc.aio: the same lease, deadline and semantics as the threaded `lock`.

    async with grpc.aio.insecure_channel("127.0.0.1:50051") as channel:
        async with holdfast.alock(channel, "reports", ttl_ms=10_000, wait_ms=5_000) as lease:
            lease.check()
            await write_report(fencing_token=lease.fencing_token)

One task reads the Hold stream and one sleeps until the local deadline (see holdfast.lease); both
end with the block. `lease.lost` is an asyncio.Event.
"""

import asyncio
import contextlib
import time

import grpc

from holdfast.lease import ACQUIRE_GRACE_S, PAST_DEADLINE, RELEASE_TIMEOUT_S, LeaseLost, LeaseState, hold_request
from holdfast.calls import acquire_request, granted
from holdfast.errors import address_of, translated
from holdfast.v1 import lock_pb2, lock_pb2_grpc


class AsyncLease(LeaseState):
    """One grant kept alive by an open Hold stream. Built by `alock`; read its fields inside the block."""

    def __init__(self, stub, name, request):
        super().__init__(stub, name, request)
        # Set once the lease can no longer be trusted; never cleared.
        self.lost = asyncio.Event()
        self._settled = asyncio.Event()  # granted, or the stream ended
        self._moved = asyncio.Event()  # the deadline moved, or the lease ended: the watcher looks again
        self._tasks = []

    @property
    def deadline(self):
        """The conservative end of the lease (time.monotonic()); it counts as lost from then on."""
        return self._deadline

    async def _open(self, wait_s):
        self._sent_at = time.monotonic()
        self._call = self._stub.Hold(self._request)
        self._tasks.append(asyncio.create_task(self._read(), name=f"holdfast-read {self.name}"))
        try:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._settled.wait(), wait_s)
            if self._acquired:
                self.check()  # a grant that came too late is never handed out
                self._tasks.append(asyncio.create_task(self._watch(), name=f"holdfast-watch {self.name}"))
                return
        except BaseException:  # LeaseLost, or the caller's task cancelled while it waited
            await self._close_stream()
            raise
        await self._close_stream()  # frees the hold at once if the server still keeps it and can hear us
        raise self._open_failure(self._error)

    async def _read(self):
        error = None
        try:
            async for response in self._call:
                lost = self._record(response)
                if self._acquired:
                    self._settled.set()
                self._moved.set()
                if lost:
                    self._lose(*lost)
        except grpc.RpcError as err:
            error = err
        except asyncio.CancelledError:
            if not self._closing:
                raise
        self._ended, self._error = True, error
        self._settled.set()
        if self._acquired and not self._closing:
            self._lose(self._ended_reason(error), lock_pb2.LOST_REASON_UNSPECIFIED)

    async def _watch(self):
        while not (self._ended or self._closing or self.lost.is_set()):
            left = self._deadline - time.monotonic()
            if left <= 0:
                self._lose(PAST_DEADLINE, lock_pb2.LOST_REASON_UNSPECIFIED)
                return
            self._moved.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._moved.wait(), left)

    def _lose(self, reason, code):
        if self.lost.is_set() or self._closing:
            return
        self.lost_reason, self.lost_code = reason, code
        self.lost.set()
        self._moved.set()

    async def release(self):
        """Gives back exactly this stream's hold (Release with token and hold_id), then ends the stream.

        Returns True when the server confirmed that this hold was given back now; False when there
        was nothing to give back (released before, or the lease was already lost) or the Release
        call failed (unreachable: ending the stream then frees the hold on a live connection, and
        otherwise the lease runs out). Never raises. Safe to call twice (the second call returns False).
        """
        if self._closing:
            return False
        self._closing = True
        self._moved.set()
        given_back = False
        if self._acquired and not self.lost.is_set() and not self._ended:
            request = lock_pb2.ReleaseRequest(name=self.name, token=self.token, hold_id=self.hold_id)
            with contextlib.suppress(grpc.RpcError):  # lost meanwhile, or unreachable: the cancel frees the hold
                await self._stub.Release(request, timeout=RELEASE_TIMEOUT_S)
                given_back = True
        await self._close_stream()
        return given_back

    async def _close_stream(self):
        self._closing = True
        self._moved.set()
        self._call.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


class alock:  # noqa: N801 - used like a function: `async with holdfast.alock(...) as lease`
    """Holds `name` for the duration of an async with-block through the Hold stream, on a grpc.aio channel.

    The same arguments and semantics as `holdfast.lock`: NotAcquired when the lock is not granted
    within wait_ms, LeaseLost when the grant arrives after its lease could have ended; inside the
    block `lease.lost` (an asyncio.Event) is set as soon as the lease can no longer be trusted, and
    leaving the block gives back this block's hold.
    """

    def __init__(self, channel, name, ttl_ms=0, wait_ms=0, owner="", shared=False, limit=0, max_hold_ms=0,
                 release_on_disconnect=False):
        request = hold_request(name, ttl_ms, wait_ms, owner, shared, limit, max_hold_ms, release_on_disconnect)
        self._wait_s = wait_ms / 1000.0 + ACQUIRE_GRACE_S
        self._lease = AsyncLease(lock_pb2_grpc.LockServiceStub(channel), name, request)
        self._lease.addr = address_of(channel)

    async def __aenter__(self):
        await self._lease._open(self._wait_s)
        return self._lease

    async def __aexit__(self, *exc):
        await self._lease.release()
        return False


async def acquire(channel, name, ttl_ms=0, wait_ms=0, owner="", shared=False, limit=0, timeout=None):
    """holdfast.acquire on a grpc.aio channel: returns the AcquireResponse, or raises NotAcquired."""
    request = acquire_request(name, ttl_ms, wait_ms, owner, shared, limit)
    with translated(channel, name):
        return granted(await lock_pb2_grpc.LockServiceStub(channel).Acquire(request, timeout=timeout), name, wait_ms)


async def release(channel, name, token, hold_id="", timeout=None):
    """holdfast.release on a grpc.aio channel: True when the lock was freed, False when holds remain
    (raises HoldfastError, NOT_FOUND, when the token holds nothing)."""
    request = lock_pb2.ReleaseRequest(name=name, token=token, hold_id=hold_id)
    with translated(channel):
        return (await lock_pb2_grpc.LockServiceStub(channel).Release(request, timeout=timeout)).released


async def inspect(channel, name, timeout=None):
    """holdfast.inspect on a grpc.aio channel: the InspectResponse for `name`."""
    with translated(channel):
        return await lock_pb2_grpc.LockServiceStub(channel).Inspect(lock_pb2.InspectRequest(name=name), timeout=timeout)


__all__ = ["AsyncLease", "LeaseLost", "acquire", "alock", "inspect", "release"]
