"""holdfast.channel over mutual TLS against a real server, and the API key on every call."""

import asyncio
import tempfile
import unittest
from concurrent import futures

import support

import grpc
import holdfast


class MutualTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.pem = staticmethod(support.make_certs(cls.dir.name))
        file = lambda name: f"{cls.dir.name}/{name}"  # noqa: E731
        ready = grpc.ssl_channel_credentials(cls.pem("ca.crt"), cls.pem("client.key"), cls.pem("client.crt"))
        cls.processes = support.Processes(
            ["--tls-cert", file("server.crt"), "--tls-key", file("server.key"), "--tls-client-ca", file("ca.crt")],
            ready_credentials=ready).start()

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop()
        cls.dir.cleanup()

    def client(self, **settings):
        return holdfast.channel(self.processes.addr, **settings)

    def test_holds_a_lock_with_the_client_certificate(self):
        name = support.random_name()
        with self.client(ca=self.pem("ca.crt"), cert=self.pem("client.crt"), key=self.pem("client.key"),
                         server_name="localhost") as channel:
            with holdfast.lock(channel, name, ttl_ms=3000, wait_ms=1000) as lease:
                self.assertGreater(lease.fencing_token, 0)
                self.assertEqual(len(holdfast.inspect(channel, name, timeout=5).holders), 1)

    def test_asyncio_channel_holds_a_lock_too(self):
        async def hold():
            async with holdfast.aio_channel(self.processes.addr, ca=self.pem("ca.crt"), cert=self.pem("client.crt"),
                                            key=self.pem("client.key")) as channel:
                async with holdfast.alock(channel, support.random_name(), ttl_ms=3000, wait_ms=1000) as lease:
                    return lease.fencing_token
        self.assertGreater(asyncio.run(hold()), 0)

    def test_refused_without_a_client_certificate_or_with_one_from_another_ca(self):
        for settings in ({"ca": self.pem("ca.crt")},
                         {"ca": self.pem("ca.crt"), "cert": self.pem("other-client.crt"), "key": self.pem("other-client.key")},
                         {"ca": self.pem("other-ca.crt"), "cert": self.pem("client.crt"), "key": self.pem("client.key")}):
            with self.subTest(settings=sorted(settings)), self.client(**settings) as channel:
                with self.assertRaises(grpc.RpcError) as raised:
                    holdfast.inspect(channel, "x", timeout=5)
                self.assertEqual(raised.exception.code(), grpc.StatusCode.UNAVAILABLE)

    def test_cert_without_key_is_refused(self):
        with self.assertRaises(ValueError):
            self.client(ca=self.pem("ca.crt"), cert=self.pem("client.crt"))


class _Recorder(grpc.GenericRpcHandler):
    """Notes each call's metadata; every call then fails UNIMPLEMENTED (no handler)."""

    def __init__(self):
        self.calls = []

    def service(self, handler_call_details):
        self.calls.append((handler_call_details.method, dict(handler_call_details.invocation_metadata)))
        return None


class ApiKeyTest(unittest.TestCase):
    """What reaches a gRPC server: the key on unary calls and on the Hold stream, sync and asyncio."""

    def setUp(self):
        self.recorder = _Recorder()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[self.recorder])
        self.addr = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    def tearDown(self):
        self.server.stop(None)

    def test_sent_on_every_call(self):
        with holdfast.channel(self.addr, api_key="py-key") as channel:
            with self.assertRaises(grpc.RpcError):
                holdfast.inspect(channel, "x", timeout=5)
            with self.assertRaises(Exception):
                with holdfast.lock(channel, "x", wait_ms=100):
                    pass

        async def hold():
            async with holdfast.aio_channel(self.addr, api_key="py-aio-key") as channel:
                with self.assertRaises(Exception):
                    async with holdfast.alock(channel, "x", wait_ms=100):
                        pass
        asyncio.run(hold())
        with holdfast.channel(self.addr) as channel, self.assertRaises(grpc.RpcError):
            holdfast.inspect(channel, "x", timeout=5)

        seen = [(method.rsplit("/", 1)[-1], metadata.get("authorization")) for method, metadata in self.recorder.calls]
        self.assertEqual(seen[:2], [("Inspect", "Bearer py-key"), ("Hold", "Bearer py-key")])
        self.assertIn(("Hold", "Bearer py-aio-key"), seen[2:-1])
        self.assertEqual(seen[-1], ("Inspect", None))

    def test_sent_on_the_session_stream(self):
        with holdfast.channel(self.addr, api_key="py-session-key") as channel, holdfast.session(channel) as session:
            with self.assertRaises(holdfast.HoldfastError):  # the recorder answers UNIMPLEMENTED
                session.inspect("x")

        async def inspect():
            async with holdfast.aio_channel(self.addr, api_key="py-asession-key") as channel:
                async with holdfast.asession(channel) as session:
                    with self.assertRaises(holdfast.HoldfastError):
                        await session.inspect("x")
        asyncio.run(inspect())
        self.assertEqual([(method.rsplit("/", 1)[-1], metadata.get("authorization"))
                          for method, metadata in self.recorder.calls],
                         [("Session", "Bearer py-session-key"), ("Session", "Bearer py-asession-key")])


if __name__ == "__main__":
    unittest.main()
