"""A lease held under a session: the SDK's Lease (or AsyncLease), kept by its session instead of a Hold stream.

Same surface as a `lock` block's lease (lost, lost_reason, lost_code, deadline, check, token,
hold_id, fencing_token, signed_fence, fence, release, set_value). Its deadline moves with the session's hold
answer and `renewed` messages (holdfast.session_deadline); the session's one keeper watches every
lease's deadline, so a held lock costs no thread or task of its own.
"""

from holdfast.lease import Lease
from holdfast.v1 import lock_pb2


class UnderSession:
    """What a lease held under a session adds to its lease class: where it is held, and its grant."""

    def _attach(self, session, stream, op_id, grant):
        self._session, self._stream, self._op_id = session, stream, op_id
        self.addr = session.addr
        self._sent_at = stream.anchors.opened_at  # the session's lease times count from the stream's open
        self.token, self.hold_id, self.fencing_token = grant.token, grant.hold_id, grant.fencing_token
        # A session's fence states no lease end: session renewals are not re-signed.
        self.hold_count, self.ttl_ms, self.signed_fence = grant.hold_count, grant.ttl_ms, grant.signed_fence
        self._acquired = True

    def _releasing(self):
        """Marks the lease released; True when it still held something to give back."""
        if self._closing:
            return False
        self._closing = True  # from now on the session's `lost` (RELEASED) for it is not news
        return not self.lost.is_set() and not self._ended

    def _value_request(self, value):
        return lock_pb2.SetValueRequest(name=self.name, token=self.token, value=value)


class SessionLease(UnderSession, Lease):
    """Built by Session.hold; `with session.hold(...) as lease:` releases it when the block ends."""

    def __init__(self, session, stream, op_id, request, grant):
        super().__init__(None, request.name, request)
        self._cond = session._lock  # the session's lock: a renewal moves every lease under it at once
        self._attach(session, stream, op_id, grant)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def release(self):
        """Gives back exactly this hold over the session (Release with token and hold_id).

        Returns True when the server confirmed it; False when there was nothing to give back
        (released before, lost, or the session ended) or the answer did not come. Never raises.
        """
        with self._cond:
            held = self._releasing()
        return held and self._session._give_back(self)

    def set_value(self, value, timeout=None):
        """Replaces the value this grant publishes to watchers, over the session; raises HoldfastError
        (NOT_FOUND) once the grant is gone, as the unary call does. `timeout` is unused (the session's)."""
        self._session._run("set_value", self._value_request(value), stream=self._stream)
