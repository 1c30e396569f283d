"""The deadline of a lease held under a session (docs/sessions.md, clients/conformance/session-deadline.json).

Every lease time a session reports counts from when the server received the stream, so the client
counts from when it opened it: Hold's rule (holdfast.lease.lease_deadline) with the open as the
send time. Counted from the open, the drift allowance grows with the session's age; a pong
re-anchors it. A ping cannot have been received before it was sent, so a lease time T >=
received_after_ms started no earlier than T - received_after_ms after the ping was sent. Each
anchor (the open, each kept pong) gives a valid lower bound: the lease keeps the latest of them.
"""

from holdfast.lease import lease_deadline

# Pongs kept besides the open: the latest may have been received after a renewal started (it says
# nothing about that renewal), and the one before it still serves.
KEPT_PONGS = 2


def anchored_deadline(anchors, lease_started_after_ms, ttl_ms):
    """The latest deadline that any anchor (sent_at in time.monotonic() seconds, received_after_ms)
    vouches for; anchors received after the renewal started say nothing about it and are skipped."""
    return max(lease_deadline(sent_at, lease_started_after_ms - received_after_ms, ttl_ms)
               for sent_at, received_after_ms in anchors if received_after_ms <= lease_started_after_ms)


class Anchors:
    """The open of one Session stream and its latest pongs."""

    def __init__(self, opened_at, kept=KEPT_PONGS):
        self.opened_at = opened_at
        self.pongs = ()
        self._kept = kept

    def add_pong(self, sent_at, received_after_ms):
        """A pong that answered a ping sent at `sent_at` (time.monotonic())."""
        self.pongs = (*self.pongs, (sent_at, received_after_ms))[-self._kept:]

    def all(self):
        """The open (received at 0 on the server's clock) and the kept pongs."""
        return ((self.opened_at, 0), *self.pongs)

    def deadline(self, lease_started_after_ms, ttl_ms):
        """The deadline a grant or renewal of this session vouches for, in time.monotonic() seconds."""
        return anchored_deadline(self.all(), lease_started_after_ms, ttl_ms)
