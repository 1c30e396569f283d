"""Bounded waits for the stores: a check runs in a worker thread and the guard stops waiting for it
after the store's timeout, whatever the driver does (a client the user built may have no socket
timeout at all; libpq cannot time out a connect under 2 s, nor a read from a frozen server).

The workers are daemon threads, so one stuck on a dead socket never holds the process at exit; a
check that finishes after its caller gave up only records a token that passed every other check.
"""

import concurrent.futures
import queue
import threading

DEFAULT_TIMEOUT_S = 1.0


def check_timeout(timeout):
    """`timeout` as a float of seconds; raises ValueError unless it is a positive number."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


class _Workers:
    """Daemon threads taking jobs from one queue; a new one starts when none is idle."""

    def __init__(self):
        self._jobs = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, call, args):
        future = concurrent.futures.Future()
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._jobs.put((call, args, future))
        if start:
            threading.Thread(target=self._work, name="holdfast-fence-store", daemon=True).start()
        return future

    def _work(self):
        while True:
            call, args, future = self._jobs.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call(*args))
                except BaseException as error:  # handed to the waiting caller
                    future.set_exception(error)
            with self._lock:
                self._idle += 1


_workers = _Workers()


class Timeout(Exception):
    """The call did not finish within its bound."""


def within(timeout, call, *args):
    """call(*args)'s result (or its exception), waited for at most `timeout` seconds; raises Timeout after."""
    future = _workers.submit(call, args)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        raise Timeout() from None
