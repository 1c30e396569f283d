"""holdfast: Python client for the holdfast lock server.

    with holdfast.lock(channel, "reports", ttl_ms=10_000, wait_ms=5_000) as lease:
        write_report(fencing_token=lease.fencing_token)

    async with holdfast.alock(aio_channel, "reports", ttl_ms=10_000, wait_ms=5_000) as lease:  # grpc.aio
        await write_report(fencing_token=lease.fencing_token)

holdfast.channel (and holdfast.aio_channel) connects with TLS, a client certificate and an API key.
holdfast.aio has the asyncio lease and acquire/release/inspect coroutines.
holdfast.session (holdfast.sessions) holds many locks under one stream with one heartbeat:

    with holdfast.session(channel) as session:
        lease = session.hold("reports", ttl_ms=10_000, wait_ms=5_000)

and holdfast.asession (holdfast.aio_sessions) the same on a grpc.aio channel.

The generated stubs live in holdfast.v1 (lock_pb2, lock_pb2_grpc).
"""

from holdfast.aio import AsyncLease, alock
from holdfast.aio_sessions import AsyncSession, AsyncSessionLease, asession
from holdfast.calls import acquire, inspect, release
from holdfast.connect import aio_channel, channel
from holdfast.election import Leader, Leadership, campaign, observe, watch
from holdfast.errors import DeadlockError, HoldfastError
from holdfast.lease import CLOCK_DRIFT, Lease, LeaseLost, NotAcquired, drift_margin_ms, lease_deadline, lock
from holdfast.sessions import Session, SessionClosed, session
from holdfast.session_lease import SessionLease

__all__ = ["CLOCK_DRIFT", "AsyncLease", "AsyncSession", "AsyncSessionLease", "DeadlockError", "HoldfastError", "Leader", "Leadership", "Lease", "LeaseLost", "NotAcquired", "acquire", "aio_channel",
           "alock", "asession", "campaign", "channel", "drift_margin_ms", "inspect", "lease_deadline", "lock", "observe", "release",
           "session", "Session", "SessionClosed", "SessionLease", "watch"]
