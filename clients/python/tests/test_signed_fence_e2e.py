"""Signed fences from a real holdfast server that signs them (clients/test-clients.sh's
HOLDFAST_SIGNED_ADDR and HOLDFAST_FENCE_KEYS_URL, or one started here): every kind of grant
carries one for its lock and token, a renewal brings a fresh one with a later lease end, the
holder's attach sends it with the unsigned pair, and a guard whose ring comes from the server's
/fence-keys admits it for its lock only."""

import asyncio
import os
import unittest

import fence_processes
import support

import grpc
import holdfast
from holdfast import fencing
from holdfast.fencing import wire


def raw_of_headers(headers):
    """The fence fields of an HTTP header dict, as a guard collects them."""
    return wire.collect_asgi([(name.lower().encode(), value.encode()) for name, value in headers.items()])


class SignedGrantsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.addr, cls.keys_url, cls.processes = support.signed_server()
        cls.channel = grpc.insecure_channel(cls.addr)
        cls.ring = fencing.KeyRing.from_url(cls.keys_url)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        if cls.processes:
            cls.processes.stop()

    def test_the_ring_from_the_servers_jwk_set_file_is_the_fetched_one(self):
        path = os.environ.get("HOLDFAST_FENCE_KEYS_FILE") if self.processes is None else None
        if path is None:  # a server of our own: its JWK set, as `holdfast fence-key public` prints it
            path = self.processes.fence_keys_file
        self.assertEqual(fencing.KeyRing.from_file(path).key_ids, self.ring.key_ids)

    def guard(self, lock, **options):
        return fencing.FenceGuard(fencing.MemoryStore(), keys=self.ring, lock=lock, **options)

    def assert_fence_of(self, signed_fence, name, token, lease_end=True):
        fence = fencing.parse_signed(signed_fence)
        self.ring.verify(fence)
        self.assertEqual((fence.namespace, fence.lock, fence.token), ("default", name, token))
        self.assertEqual(fence.lease_end_ms is not None, lease_end)
        return fence

    def test_a_held_lease_attaches_its_signed_fence_and_only_its_locks_guard_admits_it(self):
        name = support.random_name("signed")
        with holdfast.lock(self.channel, name, ttl_ms=10_000, wait_ms=5_000) as lease:
            self.assert_fence_of(lease.signed_fence, name, lease.fencing_token)
            headers = lease.fence()
            self.assertEqual(headers["Holdfast-Fence"], lease.signed_fence)
            admitted = self.guard(name).admit(raw_of_headers(headers), wire.HTTP_NAMES, None)
            self.assertEqual((admitted.lock, admitted.token, admitted.signed), (name, lease.fencing_token, True))
            metadata = dict(lease.fence_metadata())
            self.assertEqual(metadata["holdfast-fence"], lease.signed_fence)
            with self.assertRaises(fencing.FenceForAnotherLock):
                self.guard(name + "-elsewhere").admit(raw_of_headers(headers), wire.HTTP_NAMES, None)
            with self.assertRaises(fencing.FenceForAnotherNamespace):
                self.guard(name, namespace="team-a").admit(raw_of_headers(headers), wire.HTTP_NAMES, None)

    def test_a_renewal_brings_a_fresh_fence_with_a_later_lease_end(self):
        name = support.random_name("signed")
        with holdfast.lock(self.channel, name, ttl_ms=1_500, wait_ms=5_000) as lease:
            granted = lease.signed_fence
            first = self.assert_fence_of(granted, name, lease.fencing_token)
            fence_processes.wait_until(lambda: lease.signed_fence != granted, "a renewal's fresh fence", 15)
            renewed = self.assert_fence_of(lease.signed_fence, name, lease.fencing_token)
            self.assertGreater(renewed.lease_end_ms, first.lease_end_ms)
            self.assertFalse(lease.lost.is_set())

    def test_a_one_shot_grant_and_a_session_grant_carry_theirs(self):
        name = support.random_name("signed")
        grant = holdfast.acquire(self.channel, name, ttl_ms=10_000)
        try:
            self.assert_fence_of(grant.signed_fence, name, grant.fencing_token)
            headers = fencing.http_headers(name, grant.fencing_token, grant.signed_fence)
            self.assertTrue(self.guard(name).admit(raw_of_headers(headers), wire.HTTP_NAMES, None).signed)
        finally:
            holdfast.release(self.channel, name, grant.token)
        with holdfast.session(self.channel) as session, session.hold(name, ttl_ms=10_000, wait_ms=5_000) as lease:
            # A session's fence states no lease end: its renewals are not re-signed.
            self.assert_fence_of(lease.signed_fence, name, lease.fencing_token, lease_end=False)
            guard = self.guard(name, lease_end_skew_ms=0)
            self.assertEqual(guard.admit(raw_of_headers(lease.fence()), wire.HTTP_NAMES, None).lease_end_ms, None)

    def test_asyncio_leases_and_leaders_carry_theirs(self):
        name = support.random_name("signed")

        async def held():
            async with grpc.aio.insecure_channel(self.addr) as channel:
                async with holdfast.alock(channel, name, ttl_ms=10_000, wait_ms=5_000) as lease:
                    return lease.signed_fence, lease.fencing_token
        signed_fence, token = asyncio.run(held())
        self.assert_fence_of(signed_fence, name, token)
        with holdfast.campaign(self.channel, name + "-leader", "me", ttl_ms=10_000) as leader:
            self.assert_fence_of(leader.signed_fence, name + "-leader", leader.fencing_token)
            self.assertEqual(leader.fence()["Holdfast-Fence"], leader.signed_fence)


if __name__ == "__main__":
    unittest.main()
