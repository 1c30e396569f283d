import threading
import time
import unittest

import support

import grpc
import holdfast
from holdfast.v1 import lock_pb2

WAIT_S = 10.0


class LockTest(support.ServerTestCase):
    def holders(self, name):
        return list(holdfast.inspect(self.channel, name, timeout=5).holders)

    def wait_until(self, condition, what):
        wait_until(self, condition, what)

    def test_acquire_and_release(self):
        name = support.random_name()
        with holdfast.lock(self.channel, name, ttl_ms=3000, wait_ms=1000, owner="py-test") as lease:
            self.assertTrue(lease.token)
            self.assertGreater(lease.fencing_token, 0)
            self.assertFalse(lease.lost.is_set())
            [holder] = self.holders(name)
            self.assertEqual((holder.owner, holder.fencing_token), ("py-test", lease.fencing_token))
        self.assertEqual(self.holders(name), [])
        self.assertFalse(lease.lost.is_set(), lease.lost_reason)

    def test_renewals_keep_the_lease(self):
        name = support.random_name()
        # A ttl long enough that a loaded 2-core machine renews in time; the deadline must move past a
        # whole ttl, which takes several renewals.
        with holdfast.lock(self.channel, name, ttl_ms=1500, wait_ms=1000) as lease:
            first_deadline = lease.deadline
            self.wait_until(lambda: lease.deadline > first_deadline + 1.5, "renewals over a whole ttl")
            self.assertFalse(lease.lost.is_set(), lease.lost_reason)
            lease.check()

    def test_leaving_one_of_two_reentrant_blocks_keeps_the_other_hold(self):
        name = support.random_name()
        with holdfast.lock(self.channel, name, ttl_ms=600, wait_ms=1000, owner="same") as outer:
            with holdfast.lock(self.channel, name, ttl_ms=600, wait_ms=1000, owner="same") as inner:
                self.assertEqual(inner.token, outer.token)
                self.assertNotEqual(inner.hold_id, outer.hold_id)
                self.assertEqual([h.hold_count for h in self.holders(name)], [2])
            # Two renewals of the outer hold after the inner block gave back its own.
            first_deadline = outer.deadline
            self.wait_until(lambda: outer.deadline > first_deadline + 0.3 or outer.lost.is_set(), "two renewals")
            self.assertFalse(outer.lost.is_set(), outer.lost_reason)
            self.assertEqual([h.hold_count for h in self.holders(name)], [1])
        self.assertEqual(self.holders(name), [])
        self.assertFalse(inner.lost.is_set(), inner.lost_reason)

    def test_second_holder_waits_for_the_first(self):
        name = support.random_name()
        released, second = threading.Event(), {}

        def take_second():
            with holdfast.lock(self.channel, name, ttl_ms=3000, wait_ms=int(WAIT_S * 1000)) as lease:
                second["released_before"] = released.is_set()
                second["fencing_token"] = lease.fencing_token

        with holdfast.lock(self.channel, name, ttl_ms=3000, wait_ms=1000) as first:
            waiter = threading.Thread(target=take_second)
            waiter.start()
            self.wait_until(lambda: holdfast.inspect(self.channel, name).waiters == 1, "the second caller to queue")
            self.assertEqual(second, {})
            released.set()
        waiter.join(WAIT_S)
        self.assertFalse(waiter.is_alive())
        self.assertTrue(second["released_before"])
        self.assertGreater(second["fencing_token"], first.fencing_token)

    def test_not_acquired_in_time(self):
        name = support.random_name()
        with holdfast.lock(self.channel, name, ttl_ms=3000):
            started = time.monotonic()
            with self.assertRaises(holdfast.NotAcquired):
                with holdfast.lock(self.channel, name, wait_ms=200):
                    self.fail("acquired a held lock")
            self.assertGreaterEqual(time.monotonic() - started, 0.2)
        self.assertEqual(self.holders(name), [])

    def test_lost_when_the_grant_is_deleted(self):
        name = support.random_name()
        with holdfast.lock(self.channel, name, ttl_ms=600, wait_ms=1000) as lease:
            support.redis_command(self.redis_url, "DEL", *support.lock_keys(name))
            self.assertTrue(lease.lost.wait(WAIT_S), "lease.lost was not set")
            self.assertEqual(lease.lost_code, lock_pb2.LOST_REASON_EXPIRED, lease.lost_reason)
            with self.assertRaises(holdfast.LeaseLost):
                lease.check()

    def test_leaving_the_block_by_exception_releases(self):
        name = support.random_name()
        with self.assertRaises(ZeroDivisionError):
            with holdfast.lock(self.channel, name, ttl_ms=3000, wait_ms=1000):
                self.assertEqual(len(self.holders(name)), 1)
                1 / 0
        self.assertEqual(self.holders(name), [])
        with holdfast.lock(self.channel, name, wait_ms=0) as again:
            self.assertGreater(again.fencing_token, 0)

    def test_one_shot_acquire_and_release(self):
        name = support.random_name()
        grant = holdfast.acquire(self.channel, name, ttl_ms=3000)
        with self.assertRaises(holdfast.NotAcquired):
            holdfast.acquire(self.channel, name, ttl_ms=3000)
        self.assertTrue(holdfast.release(self.channel, name, grant.token))
        self.assertEqual(self.holders(name), [])


class SilentServerTest(unittest.TestCase):
    """A frozen server sends nothing, not even `lost`: the client's own deadline must fire."""

    def setUp(self):
        self.processes = support.Processes().start()
        self.addCleanup(self.processes.stop)
        self.channel = grpc.insecure_channel(self.processes.addr)
        self.addCleanup(self.channel.close)

    def test_lost_at_the_local_deadline(self):
        name = support.random_name()
        with holdfast.lock(self.channel, name, ttl_ms=500, wait_ms=1000) as lease:
            self.processes.pause()
            self.addCleanup(self.processes.resume)
            self.assertTrue(lease.lost.wait(WAIT_S), "lease.lost was not set")
            self.assertEqual(lease.lost_code, lock_pb2.LOST_REASON_UNSPECIFIED)
            self.assertIn("local deadline", lease.lost_reason)
            # The local deadline is no later than the lease's end in Redis (both wall clocks of this machine).
            deadline_ms = (time.time() + lease.deadline - time.monotonic()) * 1000
            expiry_ms = float(support.redis_command(self.processes.redis_url, "ZSCORE", support.lock_keys(name)[0], lease.token))
            self.assertLessEqual(deadline_ms, expiry_ms)
            self.processes.resume()


class LateConfirmationTest(unittest.TestCase):
    """A real stalled network (support.StallingProxy) between the client and its own server."""

    def setUp(self):
        # Short keepalive: the server gives up on a stalled connection within half a second.
        self.processes = support.Processes(["--keepalive-time-ms", "200", "--keepalive-timeout-ms", "300"]).start()
        self.addCleanup(self.processes.stop)
        self.proxy = support.StallingProxy(self.processes.addr)
        self.addCleanup(self.proxy.close)
        self.direct = grpc.insecure_channel(self.processes.addr)
        self.addCleanup(self.direct.close)
        self.proxied = grpc.insecure_channel(self.proxy.addr)
        self.addCleanup(self.proxied.close)

    def owners(self, name):
        return [holder.owner for holder in holdfast.inspect(self.direct, name, timeout=5).holders]

    def test_a_grant_that_arrives_after_its_lease_could_have_ended_is_lost(self):
        name = support.random_name()
        first = holdfast.acquire(self.direct, name, ttl_ms=30_000)
        outcome = {}

        def hold():
            try:
                with holdfast.lock(self.proxied, name, ttl_ms=300, wait_ms=20_000, owner="late") as lease:
                    outcome["held"] = lease
            except Exception as err:  # noqa: BLE001 - the test looks at what it was
                outcome["error"] = err

        holder = threading.Thread(target=hold)
        holder.start()
        wait_until(self, lambda: holdfast.inspect(self.direct, name).waiters == 1, "the Hold to queue")
        self.proxy.stall()  # the grant is made, but its answer is held back
        holdfast.release(self.direct, name, first.token)
        wait_until(self, lambda: self.owners(name) == ["late"], "the grant to the stalled Hold")
        # The server gives up on the stalled connection and the lease runs out: someone else gets it.
        holdfast.acquire(self.direct, name, ttl_ms=30_000, wait_ms=20_000, owner="taker", timeout=WAIT_S * 3)
        self.assertEqual(outcome, {})
        self.proxy.resume()
        holder.join(WAIT_S)
        self.assertFalse(holder.is_alive())
        self.assertNotIn("held", outcome)
        self.assertIsInstance(outcome.get("error"), holdfast.LeaseLost)
        self.assertIn("arrived after the lease could have ended", str(outcome["error"]))
        self.assertEqual(self.owners(name), ["taker"])


def wait_until(test, condition, what):
    """Polls the server's view (Inspect) until `condition` holds; the server pushes no such event."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            test.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


if __name__ == "__main__":
    unittest.main()
