"""holdfast.session against real servers: many locks under one stream and one heartbeat, a clean
close, lost leases, a killed server, a cut-off connection, the ping's anchor and bad operations."""

import threading
import time
import unittest
from concurrent import futures

import support

import grpc
import holdfast
from holdfast.lease import lease_deadline
from holdfast.v1 import lock_pb2

WAIT_S = 10.0
MANY = 200


def wait_until(test, condition, what, timeout_s=WAIT_S):
    """Polls an observable (the session's stats, the server's Inspect) until `condition` holds."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            test.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def in_thread(work):
    """Runs `work` in a thread; returns (thread, outcome) where outcome gets "result" or "error"."""
    outcome = {}

    def run():
        try:
            outcome["result"] = work()
        except Exception as err:  # noqa: BLE001 - the test looks at what it was
            outcome["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


class ManyLocksTest(support.ServerTestCase):
    def test_many_locks_one_heartbeat_then_a_clean_close_frees_them_all(self):
        names = [support.random_name("py-many") for _ in range(MANY)]
        ttl_ms = 1500
        session = holdfast.session(self.channel)
        with futures.ThreadPoolExecutor(16) as pool:  # many holds in flight at once, answered in any order
            leases = list(pool.map(lambda name: session.hold(name, ttl_ms=ttl_ms, wait_ms=2000, owner="py-session"),
                                   names))
        self.assertEqual(len({lease.hold_id for lease in leases}), MANY)
        first_deadlines = [lease.deadline for lease in leases]
        before = session.stats()
        self.assertEqual(before.locks, MANY)
        started = time.monotonic()
        # Several renewal ticks (each lock is renewed about every third of its ttl).
        wait_until(self, lambda: session.stats().renewed_messages >= before.renewed_messages + 5, "five renewal ticks")
        elapsed_s = time.monotonic() - started
        stats = session.stats()
        self.assertEqual(stats.last_renewed.locks, MANY)
        self.assertEqual([lease.lost_reason for lease in leases if lease.lost.is_set()], [])
        moved = [lease.deadline - first for lease, first in zip(leases, first_deadlines)]
        self.assertGreater(min(moved), 0.0)
        # One `renewed` per tick for the whole session, not one per lock: the locks were renewed
        # about MANY * elapsed / (ttl / 3) times; the messages are about 1/MANY of that.
        lock_renewals = MANY * elapsed_s / (ttl_ms / 3000.0)
        messages = stats.renewed_messages - before.renewed_messages
        self.assertLess(messages * 20, lock_renewals, f"{messages} renewed messages for ~{lock_renewals:.0f} renewals")
        # Another client sees every lock held by this session's holder.
        with futures.ThreadPoolExecutor(8) as pool:
            views = list(pool.map(lambda name: holdfast.inspect(self.channel, name, timeout=5), names))
        self.assertEqual([[(h.owner, h.fencing_token) for h in view.holders] for view in views],
                         [[("py-session", lease.fencing_token)] for lease in leases])

        session.close()
        with futures.ThreadPoolExecutor(16) as pool:  # free at once: no wait
            grants = list(pool.map(lambda name: holdfast.acquire(self.channel, name, ttl_ms=3000, wait_ms=0), names))
        self.assertTrue(all(grant.acquired for grant in grants))
        self.assertEqual([lease.lost_reason for lease in leases if lease.lost.is_set()], [])  # released, not lost
        self.assertFalse(leases[0].release())  # nothing left to give back
        with self.assertRaises(holdfast.SessionClosed):
            session.inspect(names[0])
        for name, grant in zip(names, grants):
            holdfast.release(self.channel, name, grant.token)


class SessionTest(support.ServerTestCase):
    def setUp(self):
        self.session = holdfast.session(self.channel)
        self.addCleanup(self.session.close)

    def holders(self, name):
        return list(holdfast.inspect(self.channel, name, timeout=5).holders)

    def test_release_gives_back_exactly_that_hold_and_the_session_goes_on(self):
        kept_name, given_name = support.random_name(), support.random_name()
        with self.session.hold(kept_name, ttl_ms=3000, wait_ms=1000) as kept:
            given = self.session.hold(given_name, ttl_ms=3000, wait_ms=1000)
            self.assertTrue(given.release())
            self.assertFalse(given.release())
            self.assertEqual(self.holders(given_name), [])
            self.assertEqual(len(self.holders(kept_name)), 1)
            self.assertEqual(self.session.inspect(kept_name).holders[0].fencing_token, kept.fencing_token)
            kept.set_value("over the session")
            self.assertEqual(self.holders(kept_name)[0].value, "over the session")
        self.assertEqual(self.holders(kept_name), [])
        self.assertFalse(kept.lost.is_set() or given.lost.is_set(), (kept.lost_reason, given.lost_reason))

    def test_not_acquired_in_time(self):
        name = support.random_name()
        with holdfast.lock(self.channel, name, ttl_ms=3000):
            with self.assertRaises(holdfast.NotAcquired):
                self.session.hold(name, wait_ms=200)
        self.assertEqual(self.holders(name), [])

    def test_a_lock_lost_on_the_server_is_reported_on_its_own(self):
        lost_name, kept_name = support.random_name(), support.random_name()
        lost = self.session.hold(lost_name, ttl_ms=600, wait_ms=1000)
        kept = self.session.hold(kept_name, ttl_ms=600, wait_ms=1000)
        support.redis_command(self.redis_url, "DEL", *support.lock_keys(lost_name))
        self.assertTrue(lost.lost.wait(WAIT_S), "lease.lost was not set")
        self.assertEqual(lost.lost_code, lock_pb2.LOST_REASON_EXPIRED, lost.lost_reason)
        with self.assertRaises(holdfast.LeaseLost):
            lost.check()
        deadline = kept.deadline
        wait_until(self, lambda: kept.deadline > deadline, "a renewal of the other lock")
        self.assertFalse(kept.lost.is_set(), kept.lost_reason)

    def test_a_bad_operation_raises_what_the_unary_call_raises(self):
        name = support.random_name()
        cases = {
            "hold without a name": (lambda: self.session.hold("", ttl_ms=1000),
                                    lambda: holdfast.lock(self.channel, "", ttl_ms=1000).__enter__()),
            "release with a token that holds nothing": (lambda: self.session.release(name, "no-such-token"),
                                                        lambda: holdfast.release(self.channel, name, "no-such-token")),
        }
        with self.session.hold(name, ttl_ms=3000) as on_session, holdfast.lock(self.channel, name + "-unary") as unary:
            too_long = "v" * 2000
            cases["a value over 1024 bytes"] = (lambda: on_session.set_value(too_long),
                                                lambda: unary.set_value(too_long))
            for what, (over_session, over_unary) in cases.items():
                with self.subTest(what):
                    with self.assertRaises(holdfast.HoldfastError) as session_error:
                        over_session()
                    with self.assertRaises(holdfast.HoldfastError) as unary_error:
                        over_unary()
                    self.assertEqual(session_error.exception.code(), unary_error.exception.code())
                    self.assertNotEqual(session_error.exception.code(), grpc.StatusCode.UNKNOWN)
                    self.assertEqual(str(session_error.exception), str(unary_error.exception))
            self.assertFalse(on_session.lost.is_set(), on_session.lost_reason)  # the session went on


class OwnServerTestCase(unittest.TestCase):
    """A server of the test's own (it is killed, frozen or cut off): `processes` and a `channel` to it."""

    def setUp(self):
        self.processes = support.Processes().start()
        self.addCleanup(self.processes.stop)
        self.channel = holdfast.channel(self.processes.addr)
        self.addCleanup(self.channel.close)


class KilledServerTest(OwnServerTestCase):

    def test_leases_are_lost_and_operations_in_flight_fail_clearly(self):
        session = holdfast.session(self.channel)
        self.addCleanup(session.close)
        leases = [session.hold(support.random_name(), ttl_ms=5000, wait_ms=1000) for _ in range(5)]
        busy = support.random_name()
        holdfast.acquire(self.channel, busy, ttl_ms=30_000)
        waiter, outcome = in_thread(lambda: session.hold(busy, ttl_ms=5000, wait_ms=20_000))
        wait_until(self, lambda: holdfast.inspect(self.channel, busy).waiters == 1, "the hold to queue")
        self.processes.server.kill()
        for lease in leases:
            self.assertTrue(lease.lost.wait(WAIT_S), "lease.lost was not set")
            self.assertIn("the session ended (UNAVAILABLE", lease.lost_reason)
            self.assertLess(time.monotonic(), lease.deadline)  # at once, not at the deadline
        waiter.join(WAIT_S)
        error = outcome.get("error")
        self.assertIsInstance(error, holdfast.HoldfastError, outcome)
        self.assertIn(f"holdfast at {self.processes.addr}", str(error))
        self.assertIn("it may or may not have taken effect", str(error))
        # The next operation opens a new stream, and says why it fails (refused, or reset while connecting).
        with self.assertRaises(holdfast.HoldfastError) as next_error:
            session.inspect(busy)
        self.assertEqual(next_error.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertIn(f"holdfast at {self.processes.addr}", str(next_error.exception))


class FrozenServerTest(OwnServerTestCase):
    """A frozen server sends nothing: each lease is lost at its own deadline, no later than Redis's."""

    def test_lost_at_the_local_deadline(self):
        session = holdfast.session(self.channel)  # the default ping interval: no ping in this test
        names = [support.random_name() for _ in range(3)]
        leases = [session.hold(name, ttl_ms=600, wait_ms=1000) for name in names]
        self.processes.pause()
        self.addCleanup(self.processes.resume)
        for name, lease in zip(names, leases):
            self.assertTrue(lease.lost.wait(WAIT_S), "lease.lost was not set")
            self.assertIn("local deadline", lease.lost_reason)
            deadline_ms = (time.time() + lease.deadline - time.monotonic()) * 1000
            expiry_ms = float(support.redis_command(self.processes.redis_url, "ZSCORE", support.lock_keys(name)[0],
                                                    lease.token))
            self.assertLessEqual(deadline_ms, expiry_ms)
        self.assertEqual(session.stats().pongs, 0)
        self.processes.resume()
        session.close()


class ProxiedServerTestCase(OwnServerTestCase):
    """`proxy`: a support.StallingProxy in front of the server; `direct`: a channel around it."""

    def setUp(self):
        super().setUp()
        self.direct = self.channel
        self.proxy = support.StallingProxy(self.processes.addr)
        self.addCleanup(self.proxy.close)


class ProxiedTest(ProxiedServerTestCase):
    """A session through the proxy, with the ping interval lowered."""

    def setUp(self):
        super().setUp()
        self.proxied = holdfast.channel(self.proxy.addr)
        self.addCleanup(self.proxied.close)
        grpc.channel_ready_future(self.proxied).result(timeout=WAIT_S)

    def test_an_unanswered_ping_cuts_the_stream_off_and_the_next_operation_opens_a_new_one(self):
        session = holdfast.session(self.proxied, timeout_s=1.0, ping_interval_s=0.2)
        self.addCleanup(session.close)
        leases = [session.hold(support.random_name(), ttl_ms=8000, wait_ms=1000) for _ in range(3)]
        wait_until(self, lambda: session.stats().pongs >= 1, "a pong")
        opened_at = session.stats().opened_at
        busy = support.random_name()
        holdfast.acquire(self.direct, busy, ttl_ms=30_000)
        waiter, outcome = in_thread(lambda: session.hold(busy, ttl_ms=5000, wait_ms=20_000))
        wait_until(self, lambda: holdfast.inspect(self.direct, busy).waiters == 1, "the hold to queue")
        self.proxy.stall()
        for lease in leases:
            self.assertTrue(lease.lost.wait(WAIT_S), "lease.lost was not set")
            self.assertIn("no answer to a ping within 1 s: the stream is cut off", lease.lost_reason)
            self.assertLess(time.monotonic(), lease.deadline)  # at once, not at the deadline
        waiter.join(WAIT_S)
        self.assertIn("it may or may not have taken effect", str(outcome.get("error")), outcome)
        self.proxy.resume()
        again = session.hold(support.random_name(), ttl_ms=3000, wait_ms=1000)
        self.assertGreater(session.stats().opened_at, opened_at)
        self.assertTrue(again.release())

    def test_a_pong_moves_the_anchor(self):
        """The stream reaches the server late (the proxy holds it back): counted from the open, every
        lease looks that much shorter; a pong counts from the ping instead, so the deadline is later."""
        for ping_interval_s, pongs in ((0.2, True), (60.0, False)):  # no pong: the negative control
            with self.subTest(ping_interval_s=ping_interval_s):
                session = holdfast.session(self.proxied, ping_interval_s=ping_interval_s)
                self.addCleanup(session.close)
                self.proxy.stall()
                holder, outcome = in_thread(lambda: session.hold(support.random_name(), ttl_ms=900, wait_ms=1000))
                wait_until(self, lambda: session.stats() is not None, "the stream to open")
                time.sleep(0.4)  # what the test injects: the stream's start reaches the server 0.4 s late
                self.proxy.resume()
                holder.join(WAIT_S)
                lease = outcome["result"]
                if pongs:
                    wait_until(self, lambda: session.stats().pongs >= 2, "two pongs")
                seen = session.stats().renewed_messages
                wait_until(self, lambda: session.stats().renewed_messages >= seen + 2, "renewals after the pongs")
                with session._lock:  # one consistent look at the stats and the lease
                    stats, deadline = session.stats(), lease.deadline
                renewed = stats.last_renewed
                from_open = lease_deadline(stats.opened_at, renewed.lease_started_after_ms, renewed.ttl_ms)
                if pongs:
                    self.assertGreater(deadline, from_open + 0.3)
                else:
                    self.assertAlmostEqual(deadline, from_open, delta=1e-6)
                self.assertFalse(lease.lost.is_set(), lease.lost_reason)
                session.close()


if __name__ == "__main__":
    unittest.main()
