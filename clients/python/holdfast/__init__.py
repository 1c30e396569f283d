"""holdfast: Python client for the holdfast lock server.

    with holdfast.lock(channel, "reports", ttl_ms=10_000, wait_ms=5_000) as lease:
        write_report(fencing_token=lease.fencing_token)

The generated stubs live in holdfast.v1 (lock_pb2, lock_pb2_grpc).
"""

from holdfast.calls import acquire, inspect, release
from holdfast.lease import Lease, LeaseLost, NotAcquired, lock, safety_margin_ms

__all__ = ["Lease", "LeaseLost", "NotAcquired", "acquire", "inspect", "lock", "release", "safety_margin_ms"]
