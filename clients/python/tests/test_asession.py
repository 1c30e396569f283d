"""holdfast.asession (grpc.aio) against real servers: the threaded session's rules on an event loop."""

import asyncio
import time
import unittest

import support
from test_session import MANY, WAIT_S, ProxiedServerTestCase, wait_until

import grpc
import holdfast


async def eventually(condition, what):
    """Polls an observable (the session's stats, the server's Inspect) until `condition()` holds."""
    deadline = time.monotonic() + WAIT_S
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


class AsyncSessionTest(support.ServerTestCase):
    def test_many_locks_one_heartbeat_then_a_clean_close(self):
        names = [support.random_name("py-amany") for _ in range(MANY)]

        async def run():
            async with holdfast.aio_channel(self.addr) as channel:
                session = holdfast.asession(channel)
                leases = await asyncio.gather(*(session.hold(name, ttl_ms=1500, wait_ms=2000, owner="py-asession")
                                                 for name in names))
                before = session.stats()

                async def ticks():
                    return session.stats().renewed_messages >= before.renewed_messages + 3
                await eventually(ticks, "three renewal ticks")
                views = await asyncio.gather(*(holdfast.aio.inspect(channel, name) for name in names))
                lost = [lease.lost_reason for lease in leases if lease.lost.is_set()]
                await session.close()
                return leases, before, views, lost, [lease.lost.is_set() for lease in leases]

        leases, before, views, lost, lost_after_close = asyncio.run(run())
        self.assertEqual(before.locks, MANY)
        self.assertEqual(lost, [])
        self.assertEqual([[(h.owner, h.fencing_token) for h in view.holders] for view in views],
                         [[("py-asession", lease.fencing_token)] for lease in leases])
        self.assertEqual(set(lost_after_close), {False})  # released, not lost
        for name in names:  # free at once
            grant = holdfast.acquire(self.channel, name, ttl_ms=3000, wait_ms=0)
            holdfast.release(self.channel, name, grant.token)

    def test_a_bad_operation_raises_what_the_unary_call_raises(self):
        name = support.random_name()

        async def run():
            async with holdfast.aio_channel(self.addr) as channel, holdfast.asession(channel) as session:
                errors = []
                for call in (lambda: session.release(name, "no-such-token"),
                             lambda: holdfast.aio.release(channel, name, "no-such-token"),
                             lambda: session.hold("", ttl_ms=1000),
                             lambda: holdfast.aio.acquire(channel, "", ttl_ms=1000)):
                    try:
                        await call()
                    except holdfast.HoldfastError as error:
                        errors.append((error.code(), str(error)))
                return errors

        errors = asyncio.run(run())
        self.assertEqual(len(errors), 4)
        self.assertEqual(errors[0], errors[1])
        self.assertEqual(errors[0][0], grpc.StatusCode.NOT_FOUND)
        self.assertEqual(errors[2], errors[3])
        self.assertEqual(errors[2][0], grpc.StatusCode.INVALID_ARGUMENT)

    def test_cancelling_a_waiting_hold_takes_it_out_of_the_queue(self):
        name = support.random_name()

        async def run():
            async with holdfast.aio_channel(self.addr) as channel, holdfast.asession(channel) as session:
                async with await session.hold(name, ttl_ms=3000) as first:
                    async with holdfast.asession(channel) as other:
                        waiting = asyncio.create_task(other.hold(name, ttl_ms=3000, wait_ms=20_000))

                        async def queued(count):
                            return (await session.inspect(name)).waiters == count
                        await eventually(lambda: queued(1), "the hold to queue")
                        waiting.cancel()
                        await eventually(lambda: queued(0), "the cancelled hold to leave the queue")
                        self.assertTrue(waiting.cancelled())
                    return first.lost.is_set()

        self.assertFalse(asyncio.run(run()))


class AsyncCutOffTest(ProxiedServerTestCase):
    def test_an_unanswered_ping_loses_every_lease_and_the_next_operation_opens_a_new_stream(self):
        busy = support.random_name()
        holdfast.acquire(self.direct, busy, ttl_ms=30_000)

        async def run():
            async with holdfast.aio_channel(self.proxy.addr) as channel:
                session = holdfast.asession(channel, timeout_s=1.0, ping_interval_s=0.2)
                leases = [await session.hold(support.random_name(), ttl_ms=8000, wait_ms=1000) for _ in range(3)]

                async def ponged():
                    return session.stats().pongs >= 1
                await eventually(ponged, "a pong")
                opened_at = session.stats().opened_at
                waiting = asyncio.create_task(session.hold(busy, ttl_ms=5000, wait_ms=20_000))

                async def queued():
                    return holdfast.inspect(self.direct, busy).waiters == 1
                await eventually(queued, "the hold to queue")
                self.proxy.stall()
                await asyncio.wait_for(asyncio.gather(*(lease.lost.wait() for lease in leases)), WAIT_S)
                in_time = [time.monotonic() < lease.deadline for lease in leases]
                failure = await asyncio.gather(waiting, return_exceptions=True)
                self.proxy.resume()
                again = await session.hold(support.random_name(), ttl_ms=3000, wait_ms=1000)
                reopened = session.stats().opened_at > opened_at
                released = await again.release()
                await session.close()
                return [lease.lost_reason for lease in leases], in_time, failure[0], reopened, released

        reasons, in_time, failure, reopened, released = asyncio.run(run())
        for reason in reasons:
            self.assertIn("no answer to a ping within 1 s: the stream is cut off", reason)
        self.assertEqual(set(in_time), {True})  # at once, not at the deadline
        self.assertIsInstance(failure, holdfast.HoldfastError)
        self.assertIn("it may or may not have taken effect", str(failure))
        self.assertTrue(reopened)
        self.assertTrue(released)
        wait_until(self, lambda: holdfast.inspect(self.direct, busy).waiters == 0, "no waiter left")


if __name__ == "__main__":
    unittest.main()
