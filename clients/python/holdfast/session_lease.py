"""A lease held under a session: the threaded Lease, kept by its Session instead of a Hold stream.

Same surface as a `lock` block's lease (lost, lost_reason, lost_code, deadline, check, token,
hold_id, fencing_token, fence, release, set_value). Its deadline moves with the session's hold
answer and `renewed` messages (holdfast.session_deadline); the session's one thread watches every
lease's deadline, so a held lock costs no thread of its own.
"""

from holdfast.lease import Lease
from holdfast.v1 import lock_pb2


class SessionLease(Lease):
    """Built by Session.hold; `with session.hold(...) as lease:` releases it when the block ends."""

    def __init__(self, session, stream, op_id, request, grant):
        super().__init__(None, request.name, request)
        self._cond = session._cond  # the session's lock: a renewal moves every lease under it at once
        self._session, self._stream, self._op_id = session, stream, op_id
        self.addr = session.addr
        self._sent_at = stream.anchors.opened_at
        self.token, self.hold_id, self.fencing_token = grant.token, grant.hold_id, grant.fencing_token
        self.hold_count, self.ttl_ms = grant.hold_count, grant.ttl_ms
        self._acquired = True

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
            if self._closing:
                return False
            self._closing = True  # from now on the session's `lost` (RELEASED) for it is not news
            held = not self.lost.is_set() and not self._ended
        return held and self._session._give_back(self)

    def set_value(self, value, timeout=None):
        """Replaces the value this grant publishes to watchers, over the session; raises HoldfastError
        (NOT_FOUND) once the grant is gone, as the unary call does. `timeout` is unused (the session's)."""
        request = lock_pb2.SetValueRequest(name=self.name, token=self.token, value=value)
        self._session._run("set_value", request, stream=self._stream)
