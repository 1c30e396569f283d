"""The in-process store: a dict under a lock.

It forgets every token when the process ends, so it only protects a resource whose own state
lives in the same process (and is lost with it); anything that outlives the process needs the
Redis or PostgreSQL store.
"""

import threading

from holdfast.fencing.decision import decide


class MemoryStore:
    def __init__(self):
        self._newest = {}
        self._lock = threading.Lock()

    def check(self, lock, token):
        """Decision(accepted, newest) for `token` on `lock`, recorded when accepted."""
        with self._lock:
            decision = decide(self._newest.get(lock), int(token))
            self._newest[lock] = decision.newest
            return decision
