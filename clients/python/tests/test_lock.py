import threading
import time
import unittest

import support

import grpc  # noqa: E402 - support puts the client on sys.path first
import holdfast  # noqa: E402
from holdfast.v1 import lock_pb2  # noqa: E402

WAIT_S = 10.0


class LockTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.addr, cls.redis_url, cls.processes = support.shared_server()
        cls.channel = grpc.insecure_channel(cls.addr)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        if cls.processes:
            cls.processes.stop()

    def holders(self, name):
        return list(holdfast.inspect(self.channel, name, timeout=5).holders)

    def wait_until(self, condition, what):
        """Polls the server's view (Inspect) until `condition` holds; the server pushes no such event."""
        deadline = time.monotonic() + WAIT_S
        while not condition():
            if time.monotonic() > deadline:
                self.fail(f"timed out waiting for {what}")
            time.sleep(0.02)

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
        with holdfast.lock(self.channel, name, ttl_ms=300, wait_ms=1000) as lease:
            first_deadline = lease.deadline
            self.wait_until(lambda: lease.deadline > first_deadline + 0.3, "two renewals")
            self.assertFalse(lease.lost.is_set(), lease.lost_reason)
            lease.check()

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
            frozen_at = time.monotonic()
            self.assertTrue(lease.lost.wait(WAIT_S), "lease.lost was not set")
            lost_after = time.monotonic() - frozen_at
            self.assertEqual(lease.lost_code, lock_pb2.LOST_REASON_UNSPECIFIED)
            self.assertIn("local deadline", lease.lost_reason)
            # Lost before the lease could have run out on the server (ttl from the last renewal).
            self.assertLess(lost_after, 0.5)
            self.processes.resume()


if __name__ == "__main__":
    unittest.main()
