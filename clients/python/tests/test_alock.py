"""holdfast.alock on grpc.aio: the scenarios of test_lock.py, against a live server."""

import asyncio
import time
import unittest

import support

import grpc
import holdfast
import holdfast.aio
from holdfast.v1 import lock_pb2

WAIT_S = 10.0


class AsyncLockTest(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls):
        cls.addr, cls.redis_url, cls.processes = support.shared_server()

    @classmethod
    def tearDownClass(cls):
        if cls.processes:
            cls.processes.stop()

    async def asyncSetUp(self):
        self.channel = grpc.aio.insecure_channel(self.addr)

    async def asyncTearDown(self):
        await self.channel.close()

    async def holders(self, name):
        return list((await holdfast.aio.inspect(self.channel, name, timeout=5)).holders)

    async def test_acquire_and_release(self):
        name = support.random_name("pyaio")
        async with holdfast.alock(self.channel, name, ttl_ms=3000, wait_ms=1000, owner="py-aio") as lease:
            self.assertTrue(lease.token)
            self.assertGreater(lease.fencing_token, 0)
            self.assertFalse(lease.lost.is_set())
            [holder] = await self.holders(name)
            self.assertEqual((holder.owner, holder.fencing_token), ("py-aio", lease.fencing_token))
        self.assertEqual(await self.holders(name), [])
        self.assertFalse(lease.lost.is_set(), lease.lost_reason)

    async def test_renewals_keep_the_lease(self):
        name = support.random_name("pyaio")
        # A ttl long enough that a loaded 2-core machine renews in time; the deadline must move past a
        # whole ttl, which takes several renewals.
        async with holdfast.alock(self.channel, name, ttl_ms=1500, wait_ms=1000) as lease:
            first_deadline = lease.deadline
            await wait_until(self, lambda: lease.deadline > first_deadline + 1.5, "renewals over a whole ttl")
            self.assertFalse(lease.lost.is_set(), lease.lost_reason)
            lease.check()

    async def test_second_holder_waits_for_the_first(self):
        name = support.random_name("pyaio")
        released = asyncio.Event()

        async def take_second():
            async with holdfast.alock(self.channel, name, ttl_ms=3000, wait_ms=int(WAIT_S * 1000)) as lease:
                return released.is_set(), lease.fencing_token

        async with holdfast.alock(self.channel, name, ttl_ms=3000, wait_ms=1000) as first:
            second = asyncio.create_task(take_second())
            await wait_until(self, lambda: self.waiters_are(name, 1), "the second caller to queue")
            self.assertFalse(second.done())
            released.set()
        released_before, fencing_token = await asyncio.wait_for(second, WAIT_S)
        self.assertTrue(released_before)
        self.assertGreater(fencing_token, first.fencing_token)

    async def waiters_are(self, name, count):
        return (await holdfast.aio.inspect(self.channel, name, timeout=5)).waiters == count

    async def test_not_acquired_in_time(self):
        name = support.random_name("pyaio")
        async with holdfast.alock(self.channel, name, ttl_ms=3000):
            started = time.monotonic()
            with self.assertRaises(holdfast.NotAcquired):
                async with holdfast.alock(self.channel, name, wait_ms=200):
                    self.fail("acquired a held lock")
            self.assertGreaterEqual(time.monotonic() - started, 0.2)
        self.assertEqual(await self.holders(name), [])

    async def test_lost_when_the_grant_is_deleted(self):
        name = support.random_name("pyaio")
        async with holdfast.alock(self.channel, name, ttl_ms=600, wait_ms=1000) as lease:
            support.redis_command(self.redis_url, "DEL", *support.lock_keys(name))
            await asyncio.wait_for(lease.lost.wait(), WAIT_S)
            self.assertEqual(lease.lost_code, lock_pb2.LOST_REASON_EXPIRED, lease.lost_reason)
            with self.assertRaises(holdfast.LeaseLost):
                lease.check()

    async def test_leaving_the_block_by_exception_releases(self):
        name = support.random_name("pyaio")
        with self.assertRaises(ZeroDivisionError):
            async with holdfast.alock(self.channel, name, ttl_ms=3000, wait_ms=1000):
                self.assertEqual(len(await self.holders(name)), 1)
                1 / 0
        self.assertEqual(await self.holders(name), [])

    async def test_cancelling_a_waiting_task_leaves_no_waiter(self):
        name = support.random_name("pyaio")
        async with holdfast.alock(self.channel, name, ttl_ms=3000):
            waiting = asyncio.create_task(holdfast.alock(self.channel, name, wait_ms=30_000).__aenter__())
            await wait_until(self, lambda: self.waiters_are(name, 1), "the second caller to queue")
            waiting.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await waiting
            await wait_until(self, lambda: self.waiters_are(name, 0), "the cancelled waiter to leave the queue")

    async def test_leaving_one_of_two_reentrant_blocks_keeps_the_other_hold(self):
        name = support.random_name("pyaio")
        async with holdfast.alock(self.channel, name, ttl_ms=600, wait_ms=1000, owner="same") as outer:
            async with holdfast.alock(self.channel, name, ttl_ms=600, wait_ms=1000, owner="same") as inner:
                self.assertEqual(inner.token, outer.token)
                self.assertNotEqual(inner.hold_id, outer.hold_id)
                self.assertEqual([h.hold_count for h in await self.holders(name)], [2])
            first_deadline = outer.deadline
            await wait_until(self, lambda: outer.deadline > first_deadline + 0.3 or outer.lost.is_set(), "two renewals")
            self.assertFalse(outer.lost.is_set(), outer.lost_reason)
            self.assertEqual([h.hold_count for h in await self.holders(name)], [1])
        self.assertEqual(await self.holders(name), [])

    async def test_one_shot_acquire_and_release(self):
        name = support.random_name("pyaio")
        grant = await holdfast.aio.acquire(self.channel, name, ttl_ms=3000)
        with self.assertRaises(holdfast.NotAcquired):
            await holdfast.aio.acquire(self.channel, name, ttl_ms=3000)
        self.assertTrue(await holdfast.aio.release(self.channel, name, grant.token))
        self.assertEqual(await self.holders(name), [])


class AsyncSilentServerTest(unittest.IsolatedAsyncioTestCase):
    """A frozen server sends nothing, not even `lost`: the client's own deadline must fire."""

    def setUp(self):  # blocking: not on the event loop
        self.processes = support.Processes().start()
        self.addCleanup(self.processes.stop)

    async def asyncSetUp(self):
        self.channel = grpc.aio.insecure_channel(self.processes.addr)

    async def asyncTearDown(self):
        await self.channel.close()

    async def test_lost_at_the_local_deadline(self):
        name = support.random_name("pyaio")
        async with holdfast.alock(self.channel, name, ttl_ms=500, wait_ms=1000) as lease:
            self.processes.pause()
            self.addCleanup(self.processes.resume)
            await asyncio.wait_for(lease.lost.wait(), WAIT_S)
            self.assertEqual(lease.lost_code, lock_pb2.LOST_REASON_UNSPECIFIED)
            self.assertIn("local deadline", lease.lost_reason)
            # The local deadline is no later than the lease's end in Redis (both wall clocks of this machine).
            deadline_ms = (time.time() + lease.deadline - time.monotonic()) * 1000
            expiry_ms = float(support.redis_command(self.processes.redis_url, "ZSCORE", support.lock_keys(name)[0],
                                                    lease.token))
            self.assertLessEqual(deadline_ms, expiry_ms)
            self.processes.resume()


class AsyncLateConfirmationTest(unittest.IsolatedAsyncioTestCase):
    """A real stalled network (support.StallingProxy) between the asyncio client and its own server."""

    def setUp(self):  # blocking: not on the event loop
        # Short keepalive: the server gives up on a stalled connection within half a second.
        self.processes = support.Processes(["--keepalive-time-ms", "200", "--keepalive-timeout-ms", "300"]).start()
        self.addCleanup(self.processes.stop)
        self.proxy = support.StallingProxy(self.processes.addr)
        self.addCleanup(self.proxy.close)

    async def asyncSetUp(self):
        self.direct = grpc.aio.insecure_channel(self.processes.addr)
        self.proxied = grpc.aio.insecure_channel(self.proxy.addr)

    async def asyncTearDown(self):
        await self.proxied.close()
        await self.direct.close()

    async def owners(self, name):
        return [holder.owner for holder in (await holdfast.aio.inspect(self.direct, name, timeout=5)).holders]

    async def test_a_grant_that_arrives_after_its_lease_could_have_ended_is_lost(self):
        name = support.random_name("pyaio")
        first = await holdfast.aio.acquire(self.direct, name, ttl_ms=30_000)

        async def hold():
            async with holdfast.alock(self.proxied, name, ttl_ms=300, wait_ms=20_000, owner="late"):
                self.fail("a late grant was handed out")

        holder = asyncio.create_task(hold())
        await wait_until(self, lambda: self.waiters_are(name, 1), "the Hold to queue")
        self.proxy.stall()  # the grant is made, but its answer is held back
        await holdfast.aio.release(self.direct, name, first.token)
        await wait_until(self, lambda: self.owners_are(name, ["late"]), "the grant to the stalled Hold")
        # The server gives up on the stalled connection and the lease runs out: someone else gets it.
        await holdfast.aio.acquire(self.direct, name, ttl_ms=30_000, wait_ms=20_000, owner="taker", timeout=WAIT_S * 3)
        self.assertFalse(holder.done())
        self.proxy.resume()
        # The late grant is read and refused (LeaseLost); on a loaded machine the end of the
        # connection the server gave up on may be read first (UNAVAILABLE). Never a lease.
        with self.assertRaises((holdfast.LeaseLost, grpc.RpcError)) as raised:
            await asyncio.wait_for(holder, WAIT_S)
        if isinstance(raised.exception, holdfast.LeaseLost):
            self.assertIn("arrived after the lease could have ended", str(raised.exception))
        else:
            self.assertEqual(raised.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(await self.owners(name), ["taker"])

    async def waiters_are(self, name, count):
        return (await holdfast.aio.inspect(self.direct, name, timeout=5)).waiters == count

    async def owners_are(self, name, owners):
        return await self.owners(name) == owners


async def wait_until(test, condition, what):
    """Polls the server's view until `condition` (a function, sync or async) holds."""
    deadline = time.monotonic() + WAIT_S
    while True:
        result = condition()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            test.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


if __name__ == "__main__":
    unittest.main()
