"""Deadlocks against the live server (detection on, its default --deadlock-timeout-ms): two owners
each hold one lock, then each waits for the other's. One wait raises holdfast.DeadlockError, long
before its wait timeout, with the server's message naming both locks and both owners; once that side
gives back what it holds, the other is granted. Through Hold (with a Watch on the ended wait's lock),
the unary Acquire, a Session (the session is the identity) and grpc.aio."""

import asyncio
import queue
import threading
import time

import support

import grpc
import holdfast
import holdfast.aio
from holdfast.v1 import lock_pb2

WAIT_MS = 20_000  # each wait's timeout: the deadlock must end one long before it
ABORTED_WITHIN_S = 10.0  # generous on a busy 2-core machine; the server answers about 1 s after the cycle forms
TTL_MS = 30_000


class Crossing:
    """Two parties (owners or sessions) with one lock each, each then waiting for the other's lock.

    hold(party, name) takes a lock and returns what gives it back; wait(party, name) waits for one
    in a thread of its own and returns what it got (a DeadlockError is raised)."""

    def __init__(self, test, parties, hold, wait):
        self.test, self.parties, self.hold, self.wait = test, parties, hold, wait
        self.names = [support.random_name("py-dl-a"), support.random_name("py-dl-b")]
        self.releases = []
        self._ended = queue.Queue()  # (index, result, error) as each wait ends

    def run(self, before_waits=lambda: None):
        """Returns (victim's index, its DeadlockError, the other's wait's result)."""
        try:
            self.releases = [self.hold(party, name) for party, name in zip(self.parties, self.names)]
            before_waits()
            started = time.monotonic()
            for index in (0, 1):
                threading.Thread(target=self._wait, args=(index,), daemon=True).start()
            victim, result, error = self._ended.get(timeout=WAIT_MS / 1000 + 10)
            elapsed_s = time.monotonic() - started
            self.test.assertIsNone(result, "the first wait to end was granted: no deadlock was broken")
            self.test.assertIsInstance(error, holdfast.DeadlockError, f"the first wait to end raised {error!r}")
            self.test.assertLess(elapsed_s, ABORTED_WITHIN_S, f"the deadlock was broken only after {elapsed_s:.1f} s")
            self.check_message(victim, error)
            self.releases[victim]()  # the victim gives back what it holds: the other is granted
            winner, result, other_error = self._ended.get(timeout=WAIT_MS / 1000 + 10)
            self.test.assertEqual(winner, 1 - victim)
            self.test.assertIsNone(other_error, f"the other wait failed: {other_error!r}")
            self.test.assertIsNotNone(result)
            return victim, error, result
        finally:
            for release in self.releases:
                release()

    def waited_lock(self, index):
        """The lock party `index` waits for: the other party's."""
        return self.names[1 - index]

    def check_message(self, victim, error):
        self.test.assertIsInstance(error, grpc.RpcError)  # still what code written against gRPC catches
        self.test.assertEqual(error.code(), grpc.StatusCode.ABORTED)
        self.test.assertEqual(error.lock_name, self.waited_lock(victim))
        self.test.assertTrue(error.details().startswith("deadlock: "), error.details())
        for name in self.names:
            self.test.assertIn(f'lock "{name}"', error.details())
        self.test.assertIn(error.details(), str(error))

    def _wait(self, index):
        try:
            self._ended.put((index, self.wait(self.parties[index], self.waited_lock(index)), None))
        except Exception as error:  # noqa: BLE001 - the test looks at what it was
            self._ended.put((index, None, error))


class Watcher:
    """holdfast.watch on one lock in a thread; `ready` once the lock's state (the first message) came."""

    def __init__(self, channel, name):
        self.responses = queue.Queue()
        self.ready = threading.Event()
        self._watch = holdfast.watch(channel, name)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for response in self._watch:
                self.ready.set()
                self.responses.put(response)
        except grpc.RpcError:
            pass  # cancelled by the test

    def next_of(self, event, timeout_s):
        deadline = time.monotonic() + timeout_s
        while True:
            response = self.responses.get(timeout=max(0.0, deadline - time.monotonic()))
            if response.event == event:
                return response

    def cancel(self):
        self._watch.cancel()


def owners():
    return [support.random_name("py-owner-1"), support.random_name("py-owner-2")]


class DeadlockTest(support.ServerTestCase):
    def held(self, owner, name):
        return self.enter(holdfast.lock(self.channel, name, ttl_ms=TTL_MS, owner=owner)).release

    def enter(self, context):
        value = context.__enter__()
        self.addCleanup(context.__exit__, None, None, None)
        return value

    def check_owners(self, crossing, error):
        for owner in crossing.parties:
            self.assertIn(f'owner "{owner}"', error.details())

    def test_hold_waits_one_raises_deadlock_error_the_other_is_granted_and_watch_sees_it(self):
        def wait(owner, name):
            with holdfast.lock(self.channel, name, ttl_ms=TTL_MS, wait_ms=WAIT_MS, owner=owner) as lease:
                return lease.fencing_token

        crossing = Crossing(self, owners(), self.held, wait)
        watchers = [Watcher(self.channel, name) for name in crossing.names]
        for watcher in watchers:
            self.addCleanup(watcher.cancel)

        def watching():
            for watcher in watchers:
                self.assertTrue(watcher.ready.wait(10), "the watch's first message did not come")

        victim, error, _ = crossing.run(before_waits=watching)
        self.check_owners(crossing, error)
        # The Hold stream's trailing metadata says deadlock, as docs/deadlocks.md says.
        self.assertIn(("holdfast-reason", "deadlock"), [tuple(pair) for pair in error.__cause__.trailing_metadata()])
        # A watcher of the ended wait's lock saw the deadlock event, with the same words.
        seen = watchers[1 - victim].next_of(lock_pb2.WATCH_EVENT_DEADLOCK, 10)
        self.assertEqual(seen.deadlock, error.details())

    def test_acquire_waits_one_raises_deadlock_error_the_other_is_granted(self):
        def wait(owner, name):
            grant = holdfast.acquire(self.channel, name, ttl_ms=TTL_MS, wait_ms=WAIT_MS, owner=owner, timeout=60)
            self.addCleanup(holdfast.release, self.channel, name, grant.token)
            return grant

        crossing = Crossing(self, owners(), self.held, wait)
        _, error, grant = crossing.run()
        self.check_owners(crossing, error)
        self.assertTrue(grant.acquired)

    def test_session_holds_without_owners_the_session_is_the_identity(self):
        sessions = [self.enter(holdfast.session(self.channel)) for _ in range(2)]

        def held(session, name):
            return session.hold(name, ttl_ms=TTL_MS).release

        def wait(session, name):
            return session.hold(name, ttl_ms=TTL_MS, wait_ms=WAIT_MS)

        crossing = Crossing(self, sessions, held, wait)
        _, error, lease = crossing.run()
        # The owners are the sessions' identities, two of them.
        owners_named = {part.split('"')[0] for part in error.details().split('owner "session:')[1:]}
        self.assertEqual(len(owners_named), 2, error.details())
        self.assertTrue(lease.token)
        lease.release()

    def test_aio_hold_raises_deadlock_error(self):
        async def hold_once(owner, name):
            async with grpc.aio.insecure_channel(self.addr) as channel:
                async with holdfast.alock(channel, name, ttl_ms=TTL_MS, wait_ms=WAIT_MS, owner=owner) as lease:
                    return lease.fencing_token

        crossing = Crossing(self, owners(), self.held, lambda owner, name: asyncio.run(hold_once(owner, name)))
        _, error, _ = crossing.run()
        self.check_owners(crossing, error)
        self.assertIn(("holdfast-reason", "deadlock"), list(error.__cause__.trailing_metadata()))
