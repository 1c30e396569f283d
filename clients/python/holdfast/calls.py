"""One-shot calls for scripts that manage a lease themselves (no renewals: mind the ttl)."""

from holdfast.errors import translated
from holdfast.lease import NotAcquired
from holdfast.v1 import lock_pb2, lock_pb2_grpc


def acquire(channel, name, ttl_ms=0, wait_ms=0, owner="", shared=False, limit=0, timeout=None, value=""):
    """Acquires `name` once and returns the AcquireResponse; raises NotAcquired when it is not granted,
    DeadlockError when the server ended the wait to break a deadlock.

    Nothing keeps a local deadline for this grant. Count its lease from a time.monotonic() read
    before the call, not after it returns: lease_deadline(sent_at, grant.lease_started_after_ms, grant.ttl_ms).
    """
    request = acquire_request(name, ttl_ms, wait_ms, owner, shared, limit, value)
    with translated(channel, name):
        return granted(lock_pb2_grpc.LockServiceStub(channel).Acquire(request, timeout=timeout), name, wait_ms)


def acquire_request(name, ttl_ms, wait_ms, owner, shared, limit, value=""):
    mode = lock_pb2.LOCK_MODE_SHARED if shared else lock_pb2.LOCK_MODE_EXCLUSIVE
    return lock_pb2.AcquireRequest(name=name, owner=owner, ttl_ms=ttl_ms, wait_timeout_ms=wait_ms, mode=mode,
                                   limit=limit, value=value)


def granted(grant, name, wait_ms):
    """Returns the AcquireResponse when it is a grant; raises NotAcquired when it is not."""
    if not grant.acquired:
        raise NotAcquired(f'lock "{name}" was not acquired within {wait_ms} ms')
    return grant


def release(channel, name, token, hold_id="", timeout=None):
    """Releases one hold of a grant (with hold_id: exactly that Hold stream's).

    Returns True when this call freed the grant (its hold count reached zero), False when holds of
    a reentrant grant remain. Raises HoldfastError with code NOT_FOUND when the token holds nothing
    (wrong, expired or already released), and HoldfastError for a call that failed.
    """
    request = lock_pb2.ReleaseRequest(name=name, token=token, hold_id=hold_id)
    with translated(channel):
        return lock_pb2_grpc.LockServiceStub(channel).Release(request, timeout=timeout).released


def inspect(channel, name, timeout=None):
    """Returns the InspectResponse for `name`: holders, waiters, last fencing token."""
    with translated(channel):
        return lock_pb2_grpc.LockServiceStub(channel).Inspect(lock_pb2.InspectRequest(name=name), timeout=timeout)
