"""holdfast.session on a grpc.aio channel: many locks held under one Session stream, one heartbeat.

    async with holdfast.asession(channel) as session:           # channel: holdfast.aio_channel(...)
        leases = await asyncio.gather(*(session.hold(f"jobs/{n}", ttl_ms=10_000) for n in range(200)))

The same rules as the threaded Session (holdfast.sessions): one task reads the stream and one
keeps time (deadlines, pings, cutting off a silent stream). Cancelling a task that awaits an
operation sends `cancel` for it; a hold granted meanwhile is given back.
"""

import asyncio
import contextlib
import math
import time

import grpc

from holdfast.aio import AsyncLease
from holdfast.errors import HoldfastError
from holdfast.lease import hold_request
from holdfast.session_core import CALL_TIMEOUT_S, PING_INTERVAL_S, SessionClosed, SessionCore, not_acquired_in_time
from holdfast.session_lease import UnderSession
from holdfast.session_stream import AsyncStream
from holdfast.v1 import lock_pb2


class AsyncSessionLease(UnderSession, AsyncLease):
    """Built by AsyncSession.hold; `async with await session.hold(...) as lease:` releases it at the end."""

    def __init__(self, session, stream, op_id, request, grant):
        super().__init__(None, request.name, request)
        self._attach(session, stream, op_id, grant)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.release()
        return False

    async def release(self):
        """Gives back exactly this hold over the session; True when the server confirmed it. Never raises."""
        return self._releasing() and await self._session._give_back(self)

    async def set_value(self, value):
        """Replaces the value this grant publishes to watchers, over the session (HoldfastError as the unary call)."""
        await self._session._run("set_value", self._value_request(value), stream=self._stream)


class AsyncSession(SessionCore):
    """A Session stream on a grpc.aio channel; use as an async context manager, or await close()."""

    _lease_class = AsyncSessionLease
    _new_event = asyncio.Event
    _lock = contextlib.nullcontext()  # one event loop: nothing runs between two awaits

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()
        return False

    async def hold(self, name, ttl_ms=0, wait_ms=0, owner="", shared=False, limit=0, max_hold_ms=0, value=""):
        """Session.hold, awaited: the AsyncSessionLease, or NotAcquired, DeadlockError, LeaseLost, HoldfastError."""
        request = hold_request(name, ttl_ms, wait_ms, owner, shared, limit, max_hold_ms, False, value)
        with not_acquired_in_time(name, wait_ms):
            return self._granted(await self._run("hold", request, wait_ms / 1000.0))

    async def release(self, name, token, hold_id=""):
        """holdfast.aio.release over the session: True when the grant was freed, False when holds remain."""
        return (await self._run("release", lock_pb2.ReleaseRequest(name=name, token=token, hold_id=hold_id))).released

    async def inspect(self, name):
        """holdfast.aio.inspect over the session: the InspectResponse for `name`."""
        return await self._run("inspect", lock_pb2.InspectRequest(name=name))

    async def close(self):
        """Session.close, awaited: every lock held under the session freed at once, its leases released."""
        stream = self._begin_close()
        if stream is None:
            return
        reader, keeper = stream.tasks
        try:
            await asyncio.wait_for(asyncio.shield(reader), self._timeout_s)
        except asyncio.TimeoutError:  # no end from the server in time: a cancel frees the locks of a live client too
            stream.call.cancel()
            await reader
        await keeper

    def _wake(self, stream):
        stream.moved.set()

    def _open(self):
        stream = self._current()
        if stream is not None:
            return stream
        stream = AsyncStream(self._stub, self._ping_interval_s)
        stream.tasks += [asyncio.create_task(self._read(stream), name="holdfast-session-read"),
                         asyncio.create_task(self._keep(stream), name="holdfast-session-keep")]
        self._stream = stream
        return stream

    async def _run(self, kind, request, extra_s=0.0, stream=None):
        stream = stream or self._open()
        op_id, pending = self._start(stream, kind, request)
        timeout_s = self._timeout_s + extra_s
        try:
            await asyncio.wait_for(pending.done.wait(), timeout_s)
        except asyncio.TimeoutError:
            self._abandon(stream, op_id, pending)
            if not pending.done.is_set():
                raise self._timed_out(timeout_s) from None
        except asyncio.CancelledError:  # the caller's task: the server stops the operation too
            self._abandon(stream, op_id, pending)
            raise
        return self._outcome(pending)

    async def _give_back(self, lease):
        stream = self._take_back(lease)
        if stream is None:
            return False
        request = lock_pb2.ReleaseRequest(name=lease.name, token=lease.token, hold_id=lease.hold_id)
        try:
            await self._run("release", request, stream=stream)
            return True
        except (HoldfastError, SessionClosed):
            return False

    async def _read(self, stream):
        error = None
        try:
            async for response in stream.call:
                self._on_message(stream, response)
        except grpc.RpcError as err:
            error = err
        except asyncio.CancelledError:  # the call was cancelled here (a cut-off stream, or close() timing out)
            self._end(stream, "cancelled by this client", grpc.StatusCode.CANCELLED)
            if asyncio.current_task().cancelling():
                raise
            return
        self._ended_by(stream, error)

    async def _keep(self, stream):
        while True:
            wake = self._keep_step(stream, time.monotonic())
            if wake is None:
                break
            stream.moved.clear()
            timeout = None if wake == math.inf else max(0.0, wake - time.monotonic())
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stream.moved.wait(), timeout)
        stream.call.cancel()  # a no-op once it has ended; cuts off a silent one


def asession(channel, timeout_s=CALL_TIMEOUT_S, ping_interval_s=PING_INTERVAL_S):
    """An AsyncSession on a grpc.aio `channel` (holdfast.aio_channel): `async with holdfast.asession(channel) as s:`."""
    return AsyncSession(channel, timeout_s, ping_interval_s)
