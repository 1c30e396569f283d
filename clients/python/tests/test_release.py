"""What release returns, against a real server: lease.release() (threads and asyncio) and the
one-shot holdfast.release."""

import asyncio

import support

import grpc
import holdfast


class ReleaseReturnsTest(support.ServerTestCase):
    def test_lease_release_is_true_once_then_false(self):
        name = support.random_name()
        held = holdfast.lock(self.channel, name, ttl_ms=5000, wait_ms=5000)
        lease = held.__enter__()
        self.assertTrue(lease.release())
        self.assertFalse(lease.release())
        self.assertEqual(len(holdfast.inspect(self.channel, name, timeout=5).holders), 0)

    def test_async_lease_release_is_true_once_then_false(self):
        async def run():
            async with grpc.aio.insecure_channel(self.addr) as channel:
                async with holdfast.alock(channel, support.random_name(), ttl_ms=5000, wait_ms=5000) as lease:
                    return await lease.release(), await lease.release()
        self.assertEqual(asyncio.run(run()), (True, False))

    def test_one_shot_release_true_then_not_found(self):
        name = support.random_name()
        grant = holdfast.acquire(self.channel, name, ttl_ms=5000)
        self.assertIs(holdfast.release(self.channel, name, grant.token, timeout=5), True)
        with self.assertRaises(holdfast.HoldfastError) as raised:
            holdfast.release(self.channel, name, grant.token, timeout=5)
        self.assertEqual(raised.exception.code(), grpc.StatusCode.NOT_FOUND)
        self.assertIn(self.addr, str(raised.exception))


if __name__ == "__main__":
    import unittest
    unittest.main()
